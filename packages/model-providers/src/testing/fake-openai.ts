/**
 * A loopback stand-in for an OpenAI-compatible chat completions API, written from the public API
 * reference: `POST /v1/chat/completions`, `Authorization: Bearer`, errors as `{error: {message,
 * type, param, code}}`. It refuses what the real API refuses (bad key, bad path, missing fields,
 * tool messages that answer no tool call) and otherwise answers from a script.
 */
import {
  startFakeServer,
  type FakeModelServer,
  type FakeReply,
  type RecordedRequest,
} from './fake-server.js';

export interface FakeOpenAIOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
}

export function createFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeModelServer> {
  return startFakeServer({
    basePath: '/v1',
    check: (req) => checkOpenAIRequest(req, options),
    unscripted: () => openaiError(500, 'The fake has no scripted reply left.', { type: 'server_error' }),
  });
}

export interface OpenAIErrorOptions {
  type?: string;
  code?: string | null;
  param?: string | null;
  headers?: Record<string, string>;
}

/** An error answer in the API's documented shape. */
export function openaiError(status: number, message: string, opts: OpenAIErrorOptions = {}): FakeReply {
  return {
    status,
    headers: opts.headers,
    body: {
      error: {
        message,
        type: opts.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
        param: opts.param ?? null,
        code: opts.code ?? null,
      },
    },
  };
}

export interface OpenAIToolCallSpec {
  id?: string;
  name: string;
  /** An object is sent JSON-encoded; a string is sent verbatim (e.g. to script invalid JSON). */
  arguments: unknown;
}

export interface OpenAICompletionSpec {
  text?: string | null;
  toolCalls?: OpenAIToolCallSpec[];
  /** Defaults to `tool_calls` when there are tool calls, `stop` otherwise. */
  finishReason?: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  model?: string;
}

let seq = 0;

/** A successful chat completion (`object: "chat.completion"`). */
export function openaiCompletion(spec: OpenAICompletionSpec = {}): FakeReply {
  seq += 1;
  const calls = spec.toolCalls ?? [];
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: spec.text === undefined ? (calls.length ? null : '') : spec.text,
    refusal: null,
  };
  if (calls.length > 0) {
    message.tool_calls = calls.map((c, i) => ({
      id: c.id ?? `call_fake_${seq}_${i}`,
      type: 'function',
      function: {
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
      },
    }));
  }
  const usage = spec.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  return {
    status: 200,
    headers: { 'x-request-id': `req_fake_${seq}` },
    body: {
      id: `chatcmpl-fake${seq}`,
      object: 'chat.completion',
      created: 1_700_000_000 + seq,
      model: spec.model ?? 'gpt-fake',
      choices: [
        {
          index: 0,
          message,
          logprobs: null,
          finish_reason: spec.finishReason ?? (calls.length ? 'tool_calls' : 'stop'),
        },
      ],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

/** A text-only completion. */
export function openaiText(text: string): FakeReply {
  return openaiCompletion({ text });
}

function checkOpenAIRequest(req: RecordedRequest, options: FakeOpenAIOptions): FakeReply | undefined {
  if (req.method !== 'POST' || req.path !== '/v1/chat/completions') {
    return openaiError(404, `Invalid URL (${req.method} ${req.path})`);
  }
  if (options.apiKey !== undefined) {
    const auth = req.headers.authorization;
    if (auth === undefined) {
      return openaiError(
        401,
        "You didn't provide an API key. Provide it in an Authorization header as 'Bearer YOUR_KEY'.",
      );
    }
    if (auth !== `Bearer ${options.apiKey}`) {
      const given = auth.replace(/^Bearer\s+/i, '');
      // Like the real API, the refusal echoes a masked form of the key it got.
      const masked = given.length > 8 ? `${given.slice(0, 3)}***${given.slice(-4)}` : '***';
      return openaiError(401, `Incorrect API key provided: ${masked}.`, { code: 'invalid_api_key' });
    }
  }
  const body = req.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return openaiError(400, 'We could not parse the JSON body of your request.');
  }
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') {
    return openaiError(400, 'you must provide a model parameter', { param: 'model' });
  }
  if (!Array.isArray(b.messages) || b.messages.length === 0) {
    return openaiError(400, "Missing required parameter: 'messages'.", { param: 'messages' });
  }
  // Every tool message must answer a tool call of the closest preceding assistant message.
  let open = new Set<string>();
  for (const [i, m] of (b.messages as Record<string, unknown>[]).entries()) {
    if (m.role === 'assistant') {
      open = new Set(Array.isArray(m.tool_calls) ? (m.tool_calls as { id: string }[]).map((c) => c.id) : []);
    } else if (m.role === 'tool') {
      if (typeof m.tool_call_id !== 'string' || !open.has(m.tool_call_id)) {
        return openaiError(
          400,
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          { param: `messages.[${i}].role` },
        );
      }
      open.delete(m.tool_call_id);
    } else if (open.size > 0) {
      return openaiError(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.",
        { param: 'messages' },
      );
    }
  }
  if (b.tools !== undefined) {
    const ok =
      Array.isArray(b.tools) &&
      (b.tools as Record<string, unknown>[]).every(
        (t) =>
          t.type === 'function' &&
          typeof t.function === 'object' &&
          t.function !== null &&
          typeof (t.function as Record<string, unknown>).name === 'string',
      );
    if (!ok) return openaiError(400, "Invalid 'tools': expected function tools.", { param: 'tools' });
  }
  return undefined;
}
