/**
 * A loopback stand-in for the Anthropic messages API, written from its public API reference:
 * `POST /v1/messages`, `x-api-key`, `anthropic-version`, errors as `{type: "error", error: {type,
 * message}}`. It refuses what the real API refuses (bad key, missing version header or
 * `max_tokens`, tool results that answer no tool use) and otherwise answers from a script.
 */
import {
  startFakeServer,
  type FakeModelServer,
  type FakeReply,
  type RecordedRequest,
} from './fake-server.js';

export interface FakeAnthropicOptions {
  /** When set, requests must carry `x-api-key: <apiKey>`. */
  apiKey?: string;
}

export function createFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeModelServer> {
  return startFakeServer({
    basePath: '',
    check: (req) => checkAnthropicRequest(req, options),
    unscripted: () => anthropicError(500, 'api_error', 'The fake has no scripted reply left.'),
  });
}

/** An error answer in the API's documented shape (`error.type` e.g. `rate_limit_error`). */
export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers?: Record<string, string>,
): FakeReply {
  return { status, headers, body: { type: 'error', error: { type, message } } };
}

export interface AnthropicToolUseSpec {
  id?: string;
  name: string;
  input: unknown;
}

export interface AnthropicMessageSpec {
  text?: string;
  toolUses?: AnthropicToolUseSpec[];
  /** Defaults to `tool_use` when there are tool uses, `end_turn` otherwise. */
  stopReason?: string;
  usage?: { input_tokens: number; output_tokens: number };
  model?: string;
}

let seq = 0;

/** A successful message (`type: "message"`): a text block (if any) then the tool uses. */
export function anthropicMessage(spec: AnthropicMessageSpec = {}): FakeReply {
  seq += 1;
  const content: Record<string, unknown>[] = [];
  if (spec.text !== undefined) content.push({ type: 'text', text: spec.text });
  (spec.toolUses ?? []).forEach((t, i) => {
    content.push({ type: 'tool_use', id: t.id ?? `toolu_fake_${seq}_${i}`, name: t.name, input: t.input });
  });
  const hasTools = (spec.toolUses ?? []).length > 0;
  return {
    status: 200,
    headers: { 'request-id': `req_fake_${seq}` },
    body: {
      id: `msg_fake${seq}`,
      type: 'message',
      role: 'assistant',
      model: spec.model ?? 'claude-fake',
      content,
      stop_reason: spec.stopReason ?? (hasTools ? 'tool_use' : 'end_turn'),
      stop_sequence: null,
      usage: spec.usage ?? { input_tokens: 10, output_tokens: 5 },
    },
  };
}

/** A text-only message. */
export function anthropicText(text: string): FakeReply {
  return anthropicMessage({ text });
}

type Block = Record<string, unknown>;

function checkAnthropicRequest(req: RecordedRequest, options: FakeAnthropicOptions): FakeReply | undefined {
  if (req.method !== 'POST' || req.path !== '/v1/messages') {
    return anthropicError(404, 'not_found_error', `Not found: ${req.method} ${req.path}`);
  }
  if (options.apiKey !== undefined && req.headers['x-api-key'] !== options.apiKey) {
    return anthropicError(401, 'authentication_error', 'invalid x-api-key');
  }
  if (req.headers['anthropic-version'] === undefined) {
    return anthropicError(400, 'invalid_request_error', 'anthropic-version: header is required');
  }
  const body = req.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return anthropicError(400, 'invalid_request_error', 'The request body is not valid JSON.');
  }
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') {
    return anthropicError(400, 'invalid_request_error', 'model: Field required');
  }
  if (!Number.isInteger(b.max_tokens) || (b.max_tokens as number) < 1) {
    return anthropicError(400, 'invalid_request_error', 'max_tokens: Field required');
  }
  if (!Array.isArray(b.messages) || b.messages.length === 0) {
    return anthropicError(400, 'invalid_request_error', 'messages: Field required');
  }
  if (b.system !== undefined && typeof b.system !== 'string' && !Array.isArray(b.system)) {
    return anthropicError(400, 'invalid_request_error', 'system: Input should be a valid string');
  }
  // Each tool_use must be answered by a tool_result in the very next (user) message, and a
  // tool_result must answer a tool_use of the message just before it.
  const messages = b.messages as { role?: unknown; content?: unknown }[];
  let expected = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role !== 'user' && m.role !== 'assistant') {
      return anthropicError(
        400,
        'invalid_request_error',
        `messages.${i}.role: Input should be 'user' or 'assistant'`,
      );
    }
    const blocks: Block[] =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as Block[]);
    if (!Array.isArray(blocks) || blocks.length === 0) {
      return anthropicError(
        400,
        'invalid_request_error',
        `messages.${i}: all messages must have non-empty content`,
      );
    }
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'text' && (typeof block.text !== 'string' || block.text === '')) {
        return anthropicError(
          400,
          'invalid_request_error',
          `messages.${i}.content.${j}.text: text content blocks must be non-empty`,
        );
      }
      if (
        block.type === 'tool_use' &&
        (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input))
      ) {
        return anthropicError(
          400,
          'invalid_request_error',
          `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`,
        );
      }
    }
    if (m.role === 'user') {
      for (const block of blocks) {
        if (block.type !== 'tool_result') continue;
        if (typeof block.tool_use_id !== 'string' || !expected.has(block.tool_use_id)) {
          return anthropicError(
            400,
            'invalid_request_error',
            `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        expected.delete(block.tool_use_id);
      }
      if (expected.size > 0) {
        return anthropicError(
          400,
          'invalid_request_error',
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...expected].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    } else {
      expected = new Set(blocks.filter((x) => x.type === 'tool_use').map((x) => String(x.id)));
    }
  }
  if (b.tools !== undefined) {
    const ok =
      Array.isArray(b.tools) &&
      (b.tools as Record<string, unknown>[]).every(
        (t) => typeof t.name === 'string' && typeof t.input_schema === 'object' && t.input_schema !== null,
      );
    if (!ok)
      return anthropicError(400, 'invalid_request_error', 'tools: each tool needs name and input_schema');
  }
  return undefined;
}
