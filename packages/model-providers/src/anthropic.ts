/**
 * Anthropic messages: `POST {base_url}/v1/messages`, `x-api-key`, `anthropic-version: 2023-06-01`.
 * Shapes follow the public API reference of the Messages API (non-streaming).
 */
import { asObject, BadResponse, isRecord, joinUrl, nonNegativeInt, type ProviderMapping } from './shared.js';
import type { ChatRequest, ChatResponse, StopReason, ToolCall } from './types.js';

export const ANTHROPIC_VERSION = '2023-06-01';
/** The API requires `max_tokens`; used when the request sets none. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 1024;

type Block = Record<string, unknown>;
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

export function createAnthropicMapping(): ProviderMapping {
  return {
    endpoint: (baseUrl) => joinUrl(baseUrl, '/v1/messages'),
    headers: (apiKey) => ({
      'x-api-key': apiKey,
      'anthropic-version': ANTHROPIC_VERSION,
      'content-type': 'application/json',
      accept: 'application/json',
    }),
    toRequestBody: toAnthropicBody,
    fromResponseBody: fromAnthropicBody,
    errorText: (body) => {
      if (isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string') {
        return body.error.message;
      }
      return undefined;
    },
  };
}

function toAnthropicBody(req: ChatRequest): Record<string, unknown> {
  const messages: AnthropicMessage[] = [];
  // Roles must alternate: consecutive items of one role (e.g. several tool results, or tool results
  // followed by user text) become one message whose blocks keep their order.
  const push = (role: AnthropicMessage['role'], blocks: Block[]): void => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last !== undefined && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const m of req.messages) {
    if (m.role === 'user') {
      push('user', [{ type: 'text', text: m.content }]);
    } else if (m.role === 'assistant') {
      const blocks: Block[] = [];
      // Empty text blocks are refused by the API.
      if (m.content !== undefined && m.content !== '') blocks.push({ type: 'text', text: m.content });
      for (const c of m.toolCalls ?? []) {
        blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: asObject(c.arguments) });
      }
      push('assistant', blocks);
    } else {
      const block: Block = { type: 'tool_result', tool_use_id: m.toolCallId, content: m.content };
      if (m.isError) block.is_error = true;
      push('user', [block]);
    }
  }
  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: req.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
    messages,
  };
  if (req.system !== '') body.system = req.system;
  if (req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.parameters,
    }));
  }
  return body;
}

function fromAnthropicBody(body: unknown): ChatResponse {
  if (!isRecord(body)) throw new BadResponse('the body is not a JSON object');
  if (!Array.isArray(body.content)) throw new BadResponse('the body has no content array');
  let text = '';
  const toolCalls: ToolCall[] = [];
  (body.content as unknown[]).forEach((block, index) => {
    if (!isRecord(block)) throw new BadResponse(`content[${index}] is not an object`);
    if (block.type === 'text') {
      if (typeof block.text !== 'string') throw new BadResponse(`content[${index}] has no text`);
      text += block.text;
    } else if (block.type === 'tool_use') {
      if (typeof block.id !== 'string' || typeof block.name !== 'string') {
        throw new BadResponse(`content[${index}] (tool_use) has no id or name`);
      }
      toolCalls.push({ id: block.id, name: block.name, arguments: block.input ?? {} });
    }
    // Other block types (thinking, server tools) carry nothing the runtime uses.
  });
  const response: ChatResponse = { text, toolCalls, stopReason: stopReason(body.stop_reason) };
  if (isRecord(body.usage)) {
    const inputTokens = nonNegativeInt(body.usage.input_tokens);
    const outputTokens = nonNegativeInt(body.usage.output_tokens);
    if (inputTokens !== undefined && outputTokens !== undefined) {
      response.usage = { inputTokens, outputTokens };
    }
  }
  return response;
}

function stopReason(reason: unknown): StopReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'end';
    case 'tool_use':
      return 'tool_use';
    case 'max_tokens':
      return 'max_tokens';
    default:
      return 'other';
  }
}
