import type { Logger } from '@agent/log';
import { MAX_TIMEOUT_MS, setTimer, sleep, timeoutSignal, type TimerHandle } from '@agent/timers';
import type * as Undici from 'undici';
import { createAnthropicMapping } from './anthropic.js';
import { ModelError, redactSecret, type ModelErrorCode } from './errors.js';
import { createOpenAIMapping } from './openai.js';
import { backoffDelay, retryAfterMs } from './retry.js';
import { BadResponse, isRecord, type ProviderMapping } from './shared.js';
import type {
  ChatRequest,
  ChatResponse,
  CompleteOptions,
  ModelClient,
  ModelClientState,
  ModelProviderConfig,
} from './types.js';

export type ModelFetch = typeof Undici.fetch;

let undici: Promise<typeof Undici> | undefined;
/** undici is loaded by the first model call: a daemon that makes none never holds its code and objects. */
const loadUndici = (): Promise<typeof Undici> => (undici ??= import('undici'));

export interface ModelClientOptions {
  logger: Logger;
  /** Replaces undici's `fetch`; it receives the client's own `dispatcher` in every call. */
  fetch?: ModelFetch;
  /** Options of the client's own undici `Agent` (connection pool). */
  agentOptions?: Undici.Agent.Options;
  /** Wall clock in ms, for `retry-after` dates and durations. */
  now?: () => number;
  /** Source of jitter in [0, 1). */
  random?: () => number;
  /** The wait between attempts; ends early (resolving or rejecting) when the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<unknown>;
  /** After `retire()`, calls still running this long are aborted and the pool is closed. */
  retireDeadlineMs?: number;
  /** First backoff step; doubles per retry. */
  backoffBaseMs?: number;
  /** Cap of one backoff wait. */
  backoffMaxMs?: number;
  /** A `retry-after` longer than this is not waited for: the call fails at once. */
  maxRetryAfterMs?: number;
  /** Largest response body read; larger ones are `MODEL_BAD_RESPONSE`. */
  maxResponseBytes?: number;
  /** OpenAI-compatible only: the body field that carries `maxTokens`. */
  openaiMaxTokensField?: 'max_tokens' | 'max_completion_tokens';
}

export const MODEL_CLIENT_DEFAULTS = {
  retireDeadlineMs: 60_000,
  backoffBaseMs: 500,
  backoffMaxMs: 8_000,
  maxRetryAfterMs: 30_000,
  maxResponseBytes: 16 * 1024 * 1024,
} as const;

const ERROR_BODY_BYTES = 64 * 1024;

/** One attempt that can be tried again, with what to report if it was the last. */
interface RetryableFailure {
  code: ModelErrorCode;
  what: string;
  status?: number;
  retryAfterMs?: number;
  cause?: unknown;
}

class BodyTooLarge extends Error {}

/** Builds a client for one resolved provider entry. Throws `MODEL_CONFIG_INVALID` on a bad entry. */
export function createModelClient(config: ModelProviderConfig, options: ModelClientOptions): ModelClient {
  validateConfig(config);
  const o = { ...MODEL_CLIENT_DEFAULTS, ...definedOnly(options) };
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const wait = options.sleep ?? sleep;
  const mapping: ProviderMapping =
    config.type === 'openai'
      ? createOpenAIMapping({ maxTokensField: options.openaiMaxTokensField })
      : createAnthropicMapping();
  const url = mapping.endpoint(config.base_url);
  const log = options.logger.child({ provider: config.name, provider_type: config.type });
  const secret = config.api_key;
  const label = `model provider "${config.name}"`;
  // Bounded like undici's own timeouts below (finite integers), so ours still fires first.
  const attemptTimeoutMs = Math.min(config.timeout_ms, MAX_TIMEOUT_MS);
  // undici's own header/body timeouts sit just past ours so that ours reports MODEL_TIMEOUT.
  // The pool is made by the first call.
  let pool: Promise<{ agent: Undici.Agent; fetch: ModelFetch }> | undefined;
  const connection = () =>
    (pool ??= loadUndici().then((u) => ({
      agent: new u.Agent({
        headersTimeout: Math.min(attemptTimeoutMs + 1000, MAX_TIMEOUT_MS),
        bodyTimeout: Math.min(attemptTimeoutMs + 1000, MAX_TIMEOUT_MS),
        ...options.agentOptions,
      }),
      fetch: options.fetch ?? u.fetch,
    })));

  let state: ModelClientState = 'active';
  let inFlight = 0;
  const running = new Set<AbortController>();
  let retired: Promise<void> | undefined;
  let resolveRetired: (() => void) | undefined;
  let closing = false;
  let deadline: TimerHandle | undefined;

  const fail = (code: ModelErrorCode, message: string, details: object = {}): ModelError =>
    new ModelError(code, redactSecret(message, secret), { provider: config.name, ...details });

  /** Calls were in flight when the client was retired (then its close is worth an info record). */
  let hadCalls = false;

  function closePool(reason: 'drained' | 'deadline', aborted = 0): void {
    if (closing) return;
    closing = true;
    deadline?.cancel();
    const done = (pool ?? Promise.resolve(undefined)).then((c) =>
      c === undefined ? undefined : reason === 'deadline' ? c.agent.destroy() : c.agent.close(),
    );
    done
      .catch((err: unknown) => log.warn('model client pool close failed', { error: String(err) }))
      .finally(() => {
        state = 'closed';
        // Every reload retires the previous snapshot's clients: an idle one closing is routine, not news.
        (aborted > 0 || hadCalls ? log.info : log.debug).call(log, 'model client closed', {
          reason,
          aborted_calls: aborted,
        });
        resolveRetired?.();
      });
  }

  function vendorText(raw: string): string {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    const text = mapping.errorText(parsed) ?? raw.replace(/\s+/g, ' ').trim();
    if (text === '') return '';
    return text.length > 300 ? `${text.slice(0, 300)}…` : text;
  }

  /** One HTTP attempt: a response, a retryable failure, or a thrown final error. */
  async function attempt(
    body: string,
    signals: AbortSignal[],
    attemptTimeout: AbortSignal,
  ): Promise<ChatResponse | RetryableFailure> {
    const signal = AbortSignal.any([...signals, attemptTimeout]);
    const { agent, fetch: send } = await connection();
    const res = await send(url, {
      method: 'POST',
      headers: mapping.headers(secret),
      body,
      signal,
      dispatcher: agent,
    });
    const status = res.status;
    if (status >= 200 && status < 300) {
      let text: string;
      try {
        text = await readText(res, o.maxResponseBytes);
      } catch (err) {
        if (err instanceof BodyTooLarge) {
          throw fail(
            'MODEL_BAD_RESPONSE',
            `${label} sent a response larger than ${o.maxResponseBytes} bytes. ` +
              'Lower maxTokens or check that base_url points at the right API.',
            { status },
          );
        }
        throw err;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw fail(
          'MODEL_BAD_RESPONSE',
          `${label} answered HTTP ${status} with a body that is not JSON. ` +
            `Check that base_url points at ${apiName()}.`,
          { status },
        );
      }
      try {
        return mapping.fromResponseBody(parsed);
      } catch (err) {
        if (!(err instanceof BadResponse)) throw err;
        const extra = isRecord(parsed) ? mapping.errorText(parsed) : undefined;
        throw fail(
          'MODEL_BAD_RESPONSE',
          `${label} sent a response that does not follow ${apiName()}: ${err.message}` +
            `${extra ? ` (${extra})` : ''}. Check that base_url points at ${apiName()}.`,
          { status },
        );
      }
    }

    let detail = '';
    try {
      detail = vendorText(await readText(res, ERROR_BODY_BYTES));
    } catch (err) {
      if (!(err instanceof BodyTooLarge)) throw err;
    }
    const said = `HTTP ${status}${detail ? `: ${detail}` : ''}`;
    const retryAfter = retryAfterMs(res.headers, now);
    if (status === 429) {
      return {
        code: 'MODEL_RATE_LIMITED',
        what: `is rate limiting (${said})`,
        status,
        retryAfterMs: retryAfter,
      };
    }
    if (status >= 500) {
      return {
        code: 'MODEL_UNAVAILABLE',
        what: `is unavailable (${said})`,
        status,
        retryAfterMs: retryAfter,
      };
    }
    if (status === 408) {
      return {
        code: 'MODEL_TIMEOUT',
        what: `timed out on its side (${said})`,
        status,
        retryAfterMs: retryAfter,
      };
    }
    if (status === 401 || status === 403) {
      throw fail(
        'MODEL_AUTH',
        `${label} refused the credentials (${said}). ` +
          `Check providers.${config.name}.api_key in llm.yaml, then reload.`,
        { status, attempts: 1 },
      );
    }
    throw fail(
      'MODEL_BAD_REQUEST',
      `${label} rejected the request (${said}). ` +
        'Check the model name and the request; sending it again will not help.',
      { status },
    );
  }

  function apiName(): string {
    return config.type === 'openai'
      ? 'an OpenAI-compatible chat completions API'
      : 'the Anthropic messages API';
  }

  async function run(req: ChatRequest, call: AbortController, caller?: AbortSignal): Promise<ChatResponse> {
    const body = JSON.stringify(mapping.toRequestBody(req));
    const signals = caller ? [call.signal, caller] : [call.signal];
    const started = now();
    const interrupted = (): ModelError | undefined => {
      if (caller?.aborted) {
        return fail('MODEL_ABORTED', `The call to ${label} was cancelled by the caller.`);
      }
      if (call.signal.aborted) {
        return fail(
          'MODEL_CLIENT_RETIRED',
          `The call to ${label} was aborted: its client was retired after a configuration change ` +
            `and the call was still running ${o.retireDeadlineMs} ms later. Start the turn again.`,
        );
      }
      return undefined;
    };

    for (let attemptNo = 1; ; attemptNo++) {
      const timeout = timeoutSignal(attemptTimeoutMs);
      let outcome: ChatResponse | RetryableFailure;
      try {
        outcome = await attempt(body, signals, timeout.signal);
      } catch (err) {
        const stop = interrupted();
        if (stop) throw stop;
        if (err instanceof ModelError) {
          throw new ModelError(err.code, err.message, {
            provider: err.provider,
            status: err.status,
            attempts: attemptNo,
          });
        }
        if (timeout.signal.aborted) {
          outcome = { code: 'MODEL_TIMEOUT', what: `did not answer within timeout_ms=${config.timeout_ms}` };
        } else {
          outcome = {
            code: 'MODEL_UNAVAILABLE',
            what: `could not be reached (${networkReason(err)})`,
            cause: err,
          };
        }
      } finally {
        timeout.cancel();
      }

      if (!('code' in outcome)) {
        log.debug('model call done', {
          model: req.model,
          attempts: attemptNo,
          duration_ms: now() - started,
          stop_reason: outcome.stopReason,
        });
        return outcome;
      }

      const failure = outcome;
      const giveUp = (why: string): ModelError =>
        fail(failure.code, `${label} ${failure.what}${why}. ${advice(failure.code)}`, {
          status: failure.status,
          attempts: attemptNo,
          retryAfterMs: failure.retryAfterMs,
          cause: failure.cause,
        });
      if (attemptNo > config.max_retries) {
        throw giveUp(` after ${attemptNo} attempt${attemptNo === 1 ? '' : 's'}`);
      }
      if (failure.retryAfterMs !== undefined && failure.retryAfterMs > o.maxRetryAfterMs) {
        throw giveUp(`, and asked to wait ${Math.ceil(failure.retryAfterMs / 1000)} s`);
      }
      const delay =
        failure.retryAfterMs ??
        backoffDelay(attemptNo, { baseMs: o.backoffBaseMs, maxMs: o.backoffMaxMs, random });
      log.warn('model call retry', {
        model: req.model,
        attempt: attemptNo,
        code: failure.code,
        status: failure.status,
        delay_ms: delay,
      });
      try {
        await wait(delay, AbortSignal.any(signals));
      } catch (err) {
        throw interrupted() ?? err;
      }
      // The default wait resolves, not rejects, when the call is aborted.
      const stop = interrupted();
      if (stop) throw stop;
    }
  }

  const client: ModelClient = {
    provider: config.name,
    type: config.type,
    get inFlight() {
      return inFlight;
    },
    get state() {
      return state;
    },
    async complete(req: ChatRequest, opts: CompleteOptions = {}): Promise<ChatResponse> {
      if (state !== 'active') {
        throw fail(
          'MODEL_CLIENT_RETIRED',
          `The client for ${label} is retired (its configuration was replaced). ` +
            'Build calls on the client of the current configuration snapshot.',
        );
      }
      validateRequest(req, fail);
      if (opts.signal?.aborted) {
        throw fail('MODEL_ABORTED', `The call to ${label} was cancelled by the caller.`);
      }
      const call = new AbortController();
      running.add(call);
      inFlight++;
      try {
        return await run(req, call, opts.signal);
      } finally {
        inFlight--;
        running.delete(call);
        // `state` may have changed while awaiting; read it through a widened type.
        if ((state as ModelClientState) === 'retired' && inFlight === 0) closePool('drained');
      }
    },
    retire(): Promise<void> {
      if (retired) return retired;
      state = 'retired';
      retired = new Promise<void>((resolve) => {
        resolveRetired = resolve;
      });
      hadCalls = inFlight > 0;
      (hadCalls ? log.info : log.debug).call(log, 'model client retired', { in_flight: inFlight });
      if (inFlight === 0) {
        closePool('drained');
      } else {
        // The calls themselves keep the process alive; this timer only bounds them.
        deadline = setTimer(
          () => {
            const aborted = running.size;
            for (const call of running) call.abort();
            closePool('deadline', aborted);
          },
          o.retireDeadlineMs,
          { unref: true },
        );
      }
      return retired;
    },
  };
  return client;
}

/** Reads the body up to `limit` bytes; the stream is cancelled beyond that. */
async function readText(res: Awaited<ReturnType<ModelFetch>>, limit: number): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) {
    await res.body?.cancel().catch(() => {});
    throw new BodyTooLarge();
  }
  if (res.body === null) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function advice(code: ModelErrorCode): string {
  switch (code) {
    case 'MODEL_RATE_LIMITED':
      return 'Try again later, or raise the rate limit of the provider account.';
    case 'MODEL_TIMEOUT':
      return 'Try again, or raise timeout_ms for this provider in llm.yaml.';
    default:
      return "Check base_url in llm.yaml and the provider's status, then try again.";
  }
}

function networkReason(err: unknown): string {
  const cause =
    err instanceof Error ? (err.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function validateConfig(config: ModelProviderConfig): void {
  const name = isRecord(config) && typeof config.name === 'string' ? config.name : '<unnamed>';
  const bad = (field: string, what: string): ModelError =>
    new ModelError('MODEL_CONFIG_INVALID', `providers.${name}.${field} in llm.yaml ${what}.`, {
      provider: name,
    });
  if (!isRecord(config)) throw bad('', 'is not an object');
  if (typeof config.name !== 'string' || config.name === '') throw bad('name', 'must be a non-empty string');
  if (config.type !== 'openai' && config.type !== 'anthropic') {
    throw bad('type', 'must be "openai" or "anthropic"');
  }
  let parsed: URL | undefined;
  try {
    parsed = typeof config.base_url === 'string' ? new URL(config.base_url) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw bad('base_url', 'must be an http(s) URL');
  }
  // Never send a half-resolved credential ("Bearer " + nothing).
  if (typeof config.api_key !== 'string' || config.api_key.trim() === '') {
    throw bad('api_key', 'is empty; point it at the key (e.g. ${file:secrets/<provider>.key})');
  }
  if (!Number.isFinite(config.timeout_ms) || config.timeout_ms <= 0) {
    throw bad('timeout_ms', 'must be a positive number of milliseconds');
  }
  if (!Number.isInteger(config.max_retries) || config.max_retries < 0) {
    throw bad('max_retries', 'must be an integer of 0 or more');
  }
}

function validateRequest(
  req: ChatRequest,
  fail: (code: ModelErrorCode, message: string) => ModelError,
): void {
  const problem = !isRecord(req)
    ? 'the request is not an object'
    : typeof req.model !== 'string' || req.model === ''
      ? 'model must be a non-empty string'
      : typeof req.system !== 'string'
        ? 'system must be a string'
        : !Array.isArray(req.messages)
          ? 'messages must be an array'
          : !Array.isArray(req.tools)
            ? 'tools must be an array'
            : req.maxTokens !== undefined && (!Number.isInteger(req.maxTokens) || req.maxTokens <= 0)
              ? 'maxTokens must be a positive integer'
              : undefined;
  if (problem !== undefined) {
    throw fail('MODEL_BAD_REQUEST', `Invalid chat request: ${problem}. Fix the caller; nothing was sent.`);
  }
}
