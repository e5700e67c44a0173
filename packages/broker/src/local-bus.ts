import { randomUUID } from 'node:crypto';
import type { Logger } from '@agent/log';
import { setTimer } from '@agent/timers';
import { singleAnswer } from './request-many.js';
import { BrokerError } from './errors.js';
import { decodePayload, encodePayload } from './payload.js';
import { assertSubject, subjectMatches } from './subject.js';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type Broker,
  type MessageHandler,
  type PublishOptions,
  type RequestManyOptions,
  type RequestOptions,
  type Subscription,
} from './types.js';

/** Receives a message still in its encoded form (so the socket server can forward it untouched). */
export type RawDeliver = (subject: string, text: string, reply: string | undefined) => void;

interface BusSubscription {
  pattern: string;
  deliver: RawDeliver;
}

interface PendingRequest {
  fail(err: BrokerError): void;
}

function newInbox(): string {
  return `_INBOX.${randomUUID().replaceAll('-', '')}`;
}

export function checkTimeout(timeoutMs: number | undefined): number {
  const t = timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isFinite(t) || t <= 0) {
    throw new BrokerError(
      'BROKER_ERROR',
      `request timeoutMs must be a positive number of milliseconds, got ${t}`,
    );
  }
  return t;
}

export function timeoutError(subject: string, timeoutMs: number): BrokerError {
  return new BrokerError(
    'BROKER_TIMEOUT',
    `no answer on "${subject}" within ${timeoutMs} ms: the receiver is running but did not answer; check its logs`,
  );
}

export function noRespondersError(subject: string): BrokerError {
  return new BrokerError(
    'BROKER_NO_RESPONDERS',
    `nobody is subscribed to "${subject}": the daemon (or the service answering it) is not running`,
  );
}

/** Calls a handler without letting its failure escape into the broker. */
export function invokeHandler(
  handler: MessageHandler,
  msg: { subject: string; data: unknown; reply?: string },
  logger: Logger,
): void {
  const report = (err: unknown): void =>
    logger.error('broker handler failed', {
      subject: msg.subject,
      error: (err as Error)?.message ?? String(err),
    });
  try {
    const result = handler(msg);
    if (result && typeof (result as Promise<void>).then === 'function')
      (result as Promise<void>).catch(report);
  } catch (err) {
    report(err);
  }
}

/**
 * The in-process bus. Messages are JSON-encoded on publish and decoded per delivery, so every
 * receiver gets its own copy and behaviour matches the NATS kind. Delivery is asynchronous
 * (a microtask after publish) and in publish order per subscription.
 */
export class LocalBus implements Broker {
  readonly kind = 'local' as const;
  private readonly subs = new Map<number, BusSubscription>();
  private readonly pending = new Set<PendingRequest>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly logger: Logger) {}

  private assertOpen(): void {
    if (this.closed) throw new BrokerError('BROKER_CLOSED', 'the broker is closed; create a new one');
  }

  /** Whether any subscription would receive a message on `subject`. */
  hasInterest(subject: string): boolean {
    for (const sub of this.subs.values()) if (subjectMatches(sub.pattern, subject)) return true;
    return false;
  }

  subscribeRaw(pattern: string, deliver: RawDeliver): () => void {
    this.assertOpen();
    assertSubject(pattern, true);
    const id = this.nextId++;
    this.subs.set(id, { pattern, deliver });
    return () => {
      this.subs.delete(id);
    };
  }

  publishRaw(subject: string, text: string, reply?: string): void {
    this.assertOpen();
    assertSubject(subject, false);
    if (reply !== undefined) assertSubject(reply, false);
    const targets = [...this.subs].filter(([, s]) => subjectMatches(s.pattern, subject));
    if (targets.length === 0) return;
    queueMicrotask(() => {
      // Nothing reaches a subscription that was removed (or a bus that closed) in the meantime.
      for (const [id, t] of targets) if (this.subs.has(id)) t.deliver(subject, text, reply);
    });
  }

  /** Request with an encoded body; resolves with the encoded answer. */
  requestRaw(subject: string, text: string, timeoutMs: number, signal?: AbortSignal): Promise<string> {
    this.assertOpen();
    assertSubject(subject, false);
    if (!this.hasInterest(subject)) return Promise.reject(noRespondersError(subject));
    const inbox = newInbox();
    return new Promise<string>((resolve, reject) => {
      let done = false;
      const finish = (): void => {
        done = true;
        timer.cancel();
        unsubscribe();
        this.pending.delete(entry);
      };
      const entry: PendingRequest = {
        fail: (err) => {
          if (done) return;
          finish();
          reject(err);
        },
      };
      const unsubscribe = this.subscribeRaw(inbox, (_s, answer) => {
        if (done) return;
        finish();
        resolve(answer);
      });
      const timer = setTimer(() => entry.fail(timeoutError(subject, timeoutMs)), timeoutMs);
      this.pending.add(entry);
      signal?.addEventListener(
        'abort',
        () => entry.fail(new BrokerError('BROKER_CLOSED', 'request cancelled')),
        {
          once: true,
        },
      );
      this.publishRaw(subject, text, inbox);
    });
  }

  publish(subject: string, data: unknown, opts?: PublishOptions): Promise<void> {
    try {
      this.publishRaw(subject, encodePayload(data), opts?.reply);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  subscribe(subject: string, handler: MessageHandler): Subscription {
    const unsubscribe = this.subscribeRaw(subject, (s, text, reply) => {
      let data: unknown;
      try {
        data = decodePayload(text);
      } catch {
        this.logger.warn('broker message dropped: body is not JSON', { subject: s });
        return;
      }
      invokeHandler(
        handler,
        reply === undefined ? { subject: s, data } : { subject: s, data, reply },
        this.logger,
      );
    });
    return { subject, unsubscribe };
  }

  async request(subject: string, data: unknown, opts?: RequestOptions): Promise<unknown> {
    const timeoutMs = checkTimeout(opts?.timeoutMs);
    const answer = await this.requestRaw(subject, encodePayload(data), timeoutMs);
    return decodePayload(answer);
  }

  requestMany(subject: string, data: unknown, opts: RequestManyOptions): Promise<unknown[]> {
    return singleAnswer((timeoutMs) => this.request(subject, data, { timeoutMs }), opts);
  }

  flush(): Promise<void> {
    return this.closed
      ? Promise.reject(new BrokerError('BROKER_CLOSED', 'the broker is closed; create a new one'))
      : Promise.resolve();
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const p of this.pending)
      p.fail(new BrokerError('BROKER_CLOSED', 'the broker closed before an answer came'));
    this.subs.clear();
    return Promise.resolve();
  }
}
