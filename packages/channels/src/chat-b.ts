import type { Logger } from '@agent/log';
import type {
  ChannelDeps,
  ChannelInstance,
  ChannelPlugin,
  InboundMessage,
  JsonSchema,
  SendResult,
} from './contract.js';
import { ChannelError, ChannelSendError, isRetryableStatus } from './errors.js';
import {
  checkConfigObject,
  checkOutbound,
  depsClock,
  describeNetworkError,
  isRecord,
  MAX_RESPONSE_BYTES,
  optionalString,
  parseJson,
  readCapped,
  redact,
  requireString,
  stripTrailingSlash,
  vendorRequest,
} from './internal.js';
import { splitText } from './split-text.js';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

const PLUGIN = 'chat_b';

/** One `chat_b` instance block (Telegram Bot API). */
export interface ChatBConfig {
  /** API origin; default `https://api.telegram.org`. */
  base_url?: string;
  /** `<bot id>:<secret>`; part of every request URL, so never logged. */
  bot_token: string;
  /** Long-poll `timeout` of `getUpdates` in seconds (0–50); default 25. */
  poll_timeout_secs?: number;
  /** Update types to receive (`["message"]`, …); omitted = the bot's current setting. */
  allowed_updates?: string[];
}

export const CHAT_B_DEFAULTS = {
  base_url: 'https://api.telegram.org',
  poll_timeout_secs: 25,
} as const;

/** How often one part of a message is tried when the API answers 429. */
export const CHAT_B_MAX_SEND_ATTEMPTS = 4;
/** A 429 asking to wait longer than this fails the send (retryable) instead of blocking it. */
export const CHAT_B_MAX_RETRY_AFTER_SECS = 60;
/** Poll backoff after failures: 1 s doubling, capped here. */
export const CHAT_B_MAX_POLL_BACKOFF_MS = 60_000;

export const chatBInstanceSchema: JsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'chat_b instance',
  type: 'object',
  additionalProperties: false,
  required: ['bot_token'],
  properties: {
    base_url: { type: 'string', pattern: '^https?://', default: CHAT_B_DEFAULTS.base_url },
    bot_token: { type: 'string', pattern: '^[0-9]+:[A-Za-z0-9_-]+$' },
    poll_timeout_secs: {
      type: 'integer',
      minimum: 0,
      maximum: 50,
      default: CHAT_B_DEFAULTS.poll_timeout_secs,
    },
    allowed_updates: {
      type: 'array',
      items: { type: 'string', pattern: '^[a-z_]+$' },
      uniqueItems: true,
    },
  },
};

const KNOWN_FIELDS = Object.keys(chatBInstanceSchema.properties as object);

interface ResolvedChatBConfig {
  baseUrl: string;
  botToken: string;
  pollTimeoutSecs: number;
  allowedUpdates: string[] | undefined;
}

function resolveConfig(config: unknown): ResolvedChatBConfig {
  const c = checkConfigObject(PLUGIN, config, KNOWN_FIELDS);
  const botToken = requireString(PLUGIN, c, 'bot_token');
  if (!/^[0-9]+:[A-Za-z0-9_-]+$/.test(botToken)) {
    throw new ChannelError(
      'CHANNEL_CONFIG_INVALID',
      `${PLUGIN}: \`bot_token\` must look like <bot id>:<secret> as issued by the bot father`,
    );
  }
  const timeout = c.poll_timeout_secs ?? CHAT_B_DEFAULTS.poll_timeout_secs;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0 || timeout > 50) {
    throw new ChannelError(
      'CHANNEL_CONFIG_INVALID',
      `${PLUGIN}: \`poll_timeout_secs\` must be an integer from 0 to 50`,
    );
  }
  const allowed = c.allowed_updates;
  if (allowed !== undefined && (!Array.isArray(allowed) || !allowed.every((x) => typeof x === 'string'))) {
    throw new ChannelError(
      'CHANNEL_CONFIG_INVALID',
      `${PLUGIN}: \`allowed_updates\` must be a list of strings`,
    );
  }
  return {
    baseUrl: stripTrailingSlash(optionalString(PLUGIN, c, 'base_url', CHAT_B_DEFAULTS.base_url)),
    botToken,
    pollTimeoutSecs: timeout,
    allowedUpdates: allowed as string[] | undefined,
  };
}

/** Key under which an instance's next `getUpdates` offset is kept in `ChannelDeps.state`. */
export function chatBOffsetKey(instance: string): string {
  return `offset:${instance}`;
}

export interface ChatBInstance extends ChannelInstance<ChatBConfig> {
  /** Swaps the token (and the other fields) for the next request; the running poll finishes first. */
  updateCredentials(config: ChatBConfig): void;
}

/** A failed Bot API call, before it is turned into a public error. */
class BotApiError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryAfterSecs: number | undefined,
  ) {
    super(message);
  }
}

interface ApiAnswer {
  status: number;
  ok: boolean;
  result: unknown;
  description: string | undefined;
  retryAfterSecs: number | undefined;
}

function toInbound(
  update: Record<string, unknown>,
  instance: string,
  receivedAt: string,
): InboundMessage | undefined {
  const m = update.message;
  if (!isRecord(m) || typeof m.text !== 'string' || !isRecord(m.chat)) return undefined;
  const chatId = m.chat.id;
  const messageId = m.message_id;
  if ((typeof chatId !== 'number' && typeof chatId !== 'string') || typeof messageId !== 'number')
    return undefined;
  const fromId = isRecord(m.from) ? m.from.id : undefined;
  return {
    plugin: PLUGIN,
    instance,
    chatId: String(chatId),
    senderId: typeof fromId === 'number' || typeof fromId === 'string' ? String(fromId) : String(chatId),
    text: m.text,
    messageId: String(messageId),
    receivedAt,
  };
}

class ChatBChannelInstance implements ChatBInstance {
  private config: ResolvedChatBConfig;
  private readonly log: Logger;
  private readonly clock: ReturnType<typeof depsClock>;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  /** Ends a poll backoff early: new credentials deserve a try now, not after up to a minute. */
  private backoffWake = new AbortController();

  constructor(
    private readonly instance: string,
    config: ChatBConfig,
    private readonly deps: ChannelDeps,
  ) {
    this.config = resolveConfig(config);
    this.log = deps.logger.child({ plugin: PLUGIN, instance });
    this.clock = depsClock(deps);
  }

  updateCredentials(config: ChatBConfig): void {
    this.config = resolveConfig(config);
    this.backoffWake.abort();
    this.backoffWake = new AbortController();
  }

  async start(): Promise<void> {
    if (this.loop) return;
    const stored = await this.deps.state.get(chatBOffsetKey(this.instance));
    let offset: number | undefined;
    if (stored !== undefined) {
      offset = Number(stored);
      if (!Number.isSafeInteger(offset)) {
        throw new ChannelError(
          'CHANNEL_STATE_CORRUPT',
          `${PLUGIN} instance ${this.instance}: stored offset is not an integer; delete key ` +
            `"${chatBOffsetKey(this.instance)}" from the channel state to start over`,
        );
      }
    }
    const controller = new AbortController();
    this.controller = controller;
    this.log.info('channel polling started', { offset: offset ?? 'none' });
    this.loop = this.poll(offset, controller.signal).catch((err: unknown) => {
      // The loop handles its own errors; this only guards against a bug taking the process down.
      this.log.error('channel polling stopped unexpectedly', { err: this.redact(describeNetworkError(err)) });
    });
  }

  async stop(): Promise<void> {
    const loop = this.loop;
    if (!loop) return;
    this.controller?.abort(new Error('channel stopped'));
    await loop;
    this.loop = undefined;
    this.controller = undefined;
    this.log.info('channel polling stopped');
  }

  private redact(text: string): string {
    return redact(text, [this.config.botToken]);
  }

  private url(method: string): string {
    return `${this.config.baseUrl}/bot${this.config.botToken}/${method}`;
  }

  /** One Bot API call. Throws BotApiError (already redacted) for transport failures and `ok: false`. */
  private async call(
    method: string,
    init: { query?: URLSearchParams; json?: unknown; signal?: AbortSignal; timeoutMs: number },
  ): Promise<unknown> {
    const query = init.query ? `?${init.query.toString()}` : '';
    let answer: ApiAnswer;
    try {
      const res = await vendorRequest(this.url(method) + query, {
        method: init.json === undefined ? 'GET' : 'POST',
        headers: init.json === undefined ? {} : { 'content-type': 'application/json' },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
        signal: init.signal,
        headersTimeout: init.timeoutMs,
        bodyTimeout: init.timeoutMs,
      });
      const payload = parseJson(await readCapped(res.body, MAX_RESPONSE_BYTES));
      const p = isRecord(payload) ? payload : {};
      const params = isRecord(p.parameters) ? p.parameters : {};
      answer = {
        status: res.statusCode,
        ok: p.ok === true && res.statusCode >= 200 && res.statusCode <= 299,
        result: p.result,
        description: typeof p.description === 'string' ? p.description : undefined,
        retryAfterSecs: typeof params.retry_after === 'number' ? params.retry_after : undefined,
      };
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw new BotApiError(
        `${method} could not reach the Telegram Bot API (${this.redact(describeNetworkError(err))})`,
        undefined,
        undefined,
      );
    }
    if (!answer.ok) {
      const detail = answer.description ? `: ${this.redact(answer.description).slice(0, 300)}` : '';
      throw new BotApiError(
        `${method} answered ${answer.status}${detail}`,
        answer.status,
        answer.retryAfterSecs,
      );
    }
    return answer.result;
  }

  private async poll(startOffset: number | undefined, signal: AbortSignal): Promise<void> {
    let offset = startOffset;
    let failures = 0;
    // Taken before each call: credentials that change while the call runs end the backoff that follows it.
    let wake = this.backoffWake.signal;
    const backoff = async (retryAfterSecs?: number): Promise<void> => {
      failures++;
      const exp = Math.min(CHAT_B_MAX_POLL_BACKOFF_MS, 1000 * 2 ** (failures - 1));
      const wait =
        retryAfterSecs !== undefined ? Math.min(3_600_000, Math.max(exp, retryAfterSecs * 1000)) : exp;
      await this.clock.sleep(wait, AbortSignal.any([signal, wake])).catch(() => {});
    };
    while (!signal.aborted) {
      wake = this.backoffWake.signal;
      const c = this.config;
      const query = new URLSearchParams();
      if (offset !== undefined) query.set('offset', String(offset));
      query.set('timeout', String(c.pollTimeoutSecs));
      if (c.allowedUpdates) query.set('allowed_updates', JSON.stringify(c.allowedUpdates));
      let updates: unknown;
      try {
        updates = await this.call('getUpdates', {
          query,
          signal,
          timeoutMs: (c.pollTimeoutSecs + 15) * 1000,
        });
      } catch (err) {
        if (signal.aborted) break;
        const e = err instanceof BotApiError ? err : new BotApiError(String(err), undefined, undefined);
        this.log.warn('channel poll failed', { status: e.status, err: e.message, hint: pollHint(e.status) });
        await backoff(e.retryAfterSecs);
        continue;
      }
      if (!Array.isArray(updates)) {
        this.log.warn('channel poll failed', { err: 'getUpdates answered without a result list' });
        await backoff();
        continue;
      }
      failures = 0;
      // Short polling (timeout 0) answers at once: pace it instead of spinning.
      if (updates.length === 0 && c.pollTimeoutSecs === 0)
        await this.clock.sleep(1000, signal).catch(() => {});
      for (const update of updates) {
        if (signal.aborted) break;
        if (!isRecord(update) || !Number.isSafeInteger(update.update_id)) continue;
        const updateId = update.update_id as number;
        if (offset !== undefined && updateId < offset) continue;
        const msg = toInbound(update, this.instance, this.clock.now().toISOString());
        if (msg) {
          try {
            await this.deps.onInbound(msg);
          } catch (err) {
            // Not accepted: keep the offset, so the next getUpdates hands this update over again.
            this.log.error('inbound not accepted', { update_id: updateId, err: describeNetworkError(err) });
            await backoff();
            break;
          }
        } else {
          this.log.debug('update skipped', { update_id: updateId, reason: 'not a text message' });
        }
        offset = updateId + 1;
        await this.persistOffset(offset);
      }
    }
  }

  private async persistOffset(offset: number): Promise<void> {
    try {
      await this.deps.state.set(chatBOffsetKey(this.instance), String(offset));
    } catch (err) {
      // The next getUpdates confirms the offset at the vendor anyway; only a crash before it re-delivers.
      this.log.error('channel offset not persisted', { offset, err: describeNetworkError(err) });
    }
  }

  async send(msg: { to: string; text: string }): Promise<SendResult> {
    checkOutbound(PLUGIN, msg);
    const ids: string[] = [];
    for (const part of splitText(msg.text)) {
      ids.push(await this.sendPart(msg.to, part, ids));
    }
    this.log.debug('channel message sent', { to: msg.to, parts: ids.length });
    return { ids };
  }

  private async sendPart(to: string, text: string, sentIds: string[]): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.call('sendMessage', { json: { chat_id: to, text }, timeoutMs: 30_000 });
        const id = isRecord(result) ? result.message_id : undefined;
        return typeof id === 'number' || typeof id === 'string' ? String(id) : '';
      } catch (err) {
        const e = err instanceof BotApiError ? err : new BotApiError(String(err), undefined, undefined);
        const retryAfter = e.retryAfterSecs;
        if (
          e.status === 429 &&
          retryAfter !== undefined &&
          retryAfter <= CHAT_B_MAX_RETRY_AFTER_SECS &&
          attempt < CHAT_B_MAX_SEND_ATTEMPTS
        ) {
          this.log.warn('channel send rate limited', { to, retry_after: retryAfter, attempt });
          await this.clock.sleep(Math.max(0, retryAfter) * 1000);
          continue;
        }
        const retryable = e.status === undefined || isRetryableStatus(e.status);
        this.log.warn('channel send failed', { to, status: e.status, retryable, err: e.message });
        throw new ChannelSendError(
          `${PLUGIN}: sendMessage failed: ${e.message}` +
            (retryable ? '; retry later' : '; check the chat id and that the bot may write to that chat'),
          { status: e.status, retryable, sentIds: [...sentIds] },
        );
      }
    }
  }
}

function pollHint(status: number | undefined): string | undefined {
  if (status === 401 || status === 404) return 'check bot_token';
  if (status === 409) return 'another consumer polls this bot, or a webhook is set (deleteWebhook)';
  return undefined;
}

/** `chat_b`: Telegram Bot API (getUpdates long polling inbound, sendMessage outbound). */
export const chatBChannel: ChannelPlugin<ChatBConfig, ChatBInstance> = {
  name: PLUGIN,
  instanceSchema: chatBInstanceSchema,
  // Telegram answers a second concurrent getUpdates of one bot with 409.
  singleConsumer: true,
  create: (instance, config, deps) => new ChatBChannelInstance(instance, config, deps),
};
