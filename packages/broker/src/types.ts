/** One message as a handler sees it. `data` is the decoded JSON payload. */
export interface BrokerMessage {
  subject: string;
  data: unknown;
  /** Where the sender waits for an answer (set by `request()`); answer with `publish(reply, …)`. */
  reply?: string;
}

export type MessageHandler = (msg: BrokerMessage) => void | Promise<void>;

export interface Subscription {
  readonly subject: string;
  /** Stops delivery; calling it twice is harmless. */
  unsubscribe(): void;
}

export interface RequestOptions {
  /** How long to wait for the first answer; 5000 ms when omitted. */
  timeoutMs?: number;
}

export interface RequestManyOptions {
  /** The longest wait for answers in total (ms). */
  maxWaitMs: number;
  /** Stop once this many answers came. */
  maxMessages?: number;
  /** Stop once no further answer came for this long after the last one (ms). */
  stallMs?: number;
  /** Stop as soon as this returns true for the answers so far (e.g. every expected daemon answered). */
  until?: (answers: readonly unknown[]) => boolean;
  /** Ends the wait early; the answers so far are the result. */
  signal?: AbortSignal;
}

export interface PublishOptions {
  /** Subject the receiver should answer on. */
  reply?: string;
}

/**
 * Publish/subscribe and request/reply with JSON payloads. Both kinds (`local`, `nats`) and the
 * local socket client implement it with the same behaviour.
 */
export interface Broker {
  readonly kind: 'local' | 'nats';
  publish(subject: string, data: unknown, opts?: PublishOptions): Promise<void>;
  /** Subjects may use NATS wildcards: `*` matches one token, a final `>` the rest. */
  subscribe(subject: string, handler: MessageHandler): Subscription;
  /**
   * Sends `data` with a fresh reply subject and resolves with the first answer. Rejects with
   * BROKER_NO_RESPONDERS at once when nobody is subscribed, BROKER_TIMEOUT after `timeoutMs`.
   */
  request(subject: string, data: unknown, opts?: RequestOptions): Promise<unknown>;
  /**
   * Sends `data` with a fresh reply subject and gathers every answer until `maxWaitMs`, `maxMessages`,
   * `stallMs` or `until` ends the wait; resolves with the answers in arrival order (possibly none).
   * Rejects with BROKER_NO_RESPONDERS at once when nobody is subscribed. The local kinds have one
   * receiver per subject and so return at most one answer.
   */
  requestMany(subject: string, data: unknown, opts: RequestManyOptions): Promise<unknown[]>;
  /**
   * Resolves once every earlier subscribe/unsubscribe/publish of this broker is in effect at the
   * other end (the daemon or the NATS server). Call it after subscribing when another process
   * publishes next.
   */
  flush(): Promise<void>;
  /** Stops the broker: pending requests fail with BROKER_CLOSED, buffered messages are flushed. */
  close(): Promise<void>;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;
