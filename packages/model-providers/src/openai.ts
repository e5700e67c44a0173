/**
 * OpenAI-compatible chat completions: `POST {base_url}/chat/completions`, `Authorization: Bearer`.
 * Shapes follow the public API reference of `/v1/chat/completions` (non-streaming).
 */
import {
  BadResponse,
  isRecord,
  joinUrl,
  nonNegativeInt,
  parseToolArguments,
  type ProviderMapping,
} from './shared.js';
import type { ChatRequest, ChatResponse, StopReason, ToolCall } from './types.js';

export interface OpenAIMappingOptions {
  /** Body field carrying `maxTokens`: `max_tokens` (widest support) or `max_completion_tokens`. */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens';
}

export function createOpenAIMapping(opts: OpenAIMappingOptions = {}): ProviderMapping {
  const maxTokensField = opts.maxTokensField ?? 'max_tokens';
  return {
    endpoint: (baseUrl) => joinUrl(baseUrl, '/chat/completions'),
    headers: (apiKey) => ({
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      accept: 'application/json',
    }),
    toRequestBody: (req) => toOpenAIBody(req, maxTokensField),
    fromResponseBody: fromOpenAIBody,
    errorText: (body) => {
      if (isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string') {
        return body.error.message;
      }
      return undefined;
    },
  };
}

function toOpenAIBody(
  req: ChatRequest,
  maxTokensField: 'max_tokens' | 'max_completion_tokens',
): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [];
  if (req.system !== '') messages.push({ role: 'system', content: req.system });
  for (const m of req.messages) {
    if (m.role === 'user') {
      messages.push({ role: 'user', content: m.content });
    } else if (m.role === 'assistant') {
      const calls = m.toolCalls ?? [];
      const out: Record<string, unknown> = {
        role: 'assistant',
        // The API wants `null` rather than an empty string when the turn only calls tools.
        content: m.content !== undefined && m.content !== '' ? m.content : calls.length ? null : '',
      };
      if (calls.length > 0) {
        out.tool_calls = calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: argumentsText(c) },
        }));
      }
      messages.push(out);
    } else {
      // No error flag exists in this API: the text itself tells the model that the tool failed.
      messages.push({
        role: 'tool',
        tool_call_id: m.toolCallId,
        content: m.isError ? `Error: ${m.content}` : m.content,
      });
    }
  }
  const body: Record<string, unknown> = { model: req.model, messages };
  if (req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }
  if (req.maxTokens !== undefined) body[maxTokensField] = req.maxTokens;
  return body;
}

function argumentsText(call: ToolCall): string {
  // Unparseable arguments go back verbatim so the transcript shows the model what it sent.
  if (call.argumentsError !== undefined && typeof call.arguments === 'string') return call.arguments;
  return JSON.stringify(call.arguments ?? {});
}

function fromOpenAIBody(body: unknown): ChatResponse {
  if (!isRecord(body)) throw new BadResponse('the body is not a JSON object');
  const choice = Array.isArray(body.choices) ? (body.choices[0] as unknown) : undefined;
  if (!isRecord(choice) || !isRecord(choice.message)) {
    throw new BadResponse('the body has no choices[0].message');
  }
  const message = choice.message;
  let text = '';
  if (typeof message.content === 'string') text = message.content;
  else if (typeof message.refusal === 'string') text = message.refusal;

  const toolCalls: ToolCall[] = [];
  const rawCalls = Array.isArray(message.tool_calls) ? (message.tool_calls as unknown[]) : [];
  rawCalls.forEach((raw, index) => {
    if (!isRecord(raw) || !isRecord(raw.function) || typeof raw.function.name !== 'string') {
      throw new BadResponse(`tool_calls[${index}] has no function name`);
    }
    // Some compatible servers omit ids; the runtime still needs one to answer the call.
    const id = typeof raw.id === 'string' && raw.id !== '' ? raw.id : `call_${index}`;
    toolCalls.push(parseToolArguments(id, raw.function.name, raw.function.arguments));
  });

  const response: ChatResponse = {
    text,
    toolCalls,
    stopReason: stopReason(choice.finish_reason, toolCalls.length > 0),
  };
  if (isRecord(body.usage)) {
    const inputTokens = nonNegativeInt(body.usage.prompt_tokens);
    const outputTokens = nonNegativeInt(body.usage.completion_tokens);
    if (inputTokens !== undefined && outputTokens !== undefined) {
      response.usage = { inputTokens, outputTokens };
    }
  }
  return response;
}

function stopReason(finish: unknown, hasToolCalls: boolean): StopReason {
  switch (finish) {
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'stop':
      // Several compatible servers report `stop` even when the message carries tool calls.
      return hasToolCalls ? 'tool_use' : 'end';
    case 'length':
      return 'max_tokens';
    default:
      return 'other';
  }
}
