import type { Logger } from '@agent/log';

/** A draft-07 JSON Schema object. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** One chat message that arrived on a channel instance. */
export interface InboundMessage {
  /** Plugin name, e.g. `chat_b`. */
  plugin: string;
  /** Instance name as configured under `instances:` in `config/plugins/<plugin>.yaml`. */
  instance: string;
  /** Where a reply goes: pass it as `to` of `send`. */
  chatId: string;
  /** Who wrote the message (equal to `chatId` in one-to-one chats). */
  senderId: string;
  text: string;
  /** The vendor's message id; together with `plugin`, `instance` and `chatId` it identifies the message. */
  messageId: string;
  /** When this process received the message (ISO 8601, UTC). */
  receivedAt: string;
}

export interface OutboundMessage {
  /** Recipient id in the channel's own terms (phone number / wa_id for `chat_a`, chat id for `chat_b`). */
  to: string;
  text: string;
}

export interface SendResult {
  /** Vendor message ids, one per delivered part (long texts are split). */
  ids: string[];
}

/** A small persistent string map; one per plugin, keys are namespaced by instance. */
export interface KeyValueStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
}

export interface ChannelDeps {
  logger: Logger;
  state: KeyValueStore;
  /**
   * Hands one inbound message to the runtime. Resolves once the runtime accepted it (queued or
   * handled); a rejection means "not accepted" and the channel arranges for it to come again.
   */
  onInbound(msg: InboundMessage): Promise<void>;
  /** Wall clock; defaults to `() => new Date()`. */
  now?: () => Date;
  /**
   * Waits `ms`, ending early (resolving or rejecting) when `signal` aborts; defaults to `sleep` of
   * `@agent/timers`. Used for backoff.
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<unknown>;
}

/** One configured, running connection to a chat service. */
export interface ChannelInstance<C = unknown> {
  /** Starts inbound delivery (listener / long poll). Outbound `send` needs no `start`. */
  start(): Promise<void>;
  send(msg: OutboundMessage): Promise<SendResult>;
  /** Swaps credentials in place after a reload (no reconnect, no lost inbound). */
  updateCredentials?(config: C): void;
  /** Stops inbound delivery promptly; idempotent. */
  stop(): Promise<void>;
}

/** A channel plugin: a named factory of instances plus the JSON Schema of one instance block. */
export interface ChannelPlugin<C = unknown, I extends ChannelInstance<C> = ChannelInstance<C>> {
  /** `/^[a-z][a-z0-9_]*$/`; the file `config/plugins/<name>.yaml` configures its instances. */
  readonly name: string;
  /** JSON Schema (draft-07) of one block under `instances:`; `additionalProperties: false`, with defaults. */
  readonly instanceSchema: JsonSchema;
  /**
   * The inbound side may run in one process at a time per instance (a long poll the vendor allows once per
   * credential, like Telegram's `getUpdates`). Where several daemons share the config, only the instance's
   * owner starts it; the others still send. Default: false (inbound may run everywhere, like webhooks).
   */
  readonly singleConsumer?: boolean;
  /** Builds an instance; `config` was validated against `instanceSchema` and has secrets resolved. */
  create(instance: string, config: C, deps: ChannelDeps): I;
}
