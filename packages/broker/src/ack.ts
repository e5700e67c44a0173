import { randomUUID } from 'node:crypto';
import { setTimer, type TimerHandle } from '@agent/timers';
import { BrokerError, isBrokerError } from './errors.js';
import { checkTimeout, timeoutError } from './local-bus.js';
import type { Broker } from './types.js';

export interface RequestWithAckOptions {
  /** Where the request goes, e.g. `control.reload`. */
  subject: string;
  /** Where answers are also published for everyone, e.g. `control.reload.ack`. */
  ackSubject: string;
  /** Request body; an object. The correlation field is added when missing. */
  data: Record<string, unknown>;
  /** Field carrying the correlation id in request and ack; `request_id` when omitted. */
  correlationKey?: string;
  /** 5000 ms when omitted. */
  timeoutMs?: number;
}

/**
 * The `control.reload` pattern: listens on `ackSubject` for an answer whose correlation field equals
 * ours (acks for other requests are ignored), and at the same time sends the request with a reply
 * subject. The first of the two answers wins, so a receiver may answer either way. Because the
 * request goes through `request()`, nobody listening fails fast with BROKER_NO_RESPONDERS instead
 * of waiting out the timeout.
 */
export async function requestWithAck(broker: Broker, opts: RequestWithAckOptions): Promise<unknown> {
  const timeoutMs = checkTimeout(opts.timeoutMs);
  const key = opts.correlationKey ?? 'request_id';
  const id = opts.data[key] ?? randomUUID();
  const body = { ...opts.data, [key]: id };
  let timer: TimerHandle | undefined;
  let sub: { unsubscribe(): void } | undefined;
  try {
    return await new Promise<unknown>((resolve, reject) => {
      sub = broker.subscribe(opts.ackSubject, (msg) => {
        const d = msg.data;
        if (typeof d === 'object' && d !== null && (d as Record<string, unknown>)[key] === id) resolve(d);
      });
      timer = setTimer(() => reject(timeoutError(opts.subject, timeoutMs)), timeoutMs);
      // The request's own timeout is a little longer, so the overall timer (which also covers the ack
      // subject) is the one that reports BROKER_TIMEOUT.
      broker.request(opts.subject, body, { timeoutMs: timeoutMs + 1000 }).then(resolve, (err: unknown) => {
        if (isBrokerError(err, 'BROKER_TIMEOUT')) return;
        reject(err instanceof BrokerError ? err : new BrokerError('BROKER_ERROR', String(err)));
      });
    });
  } finally {
    timer?.cancel();
    sub?.unsubscribe();
  }
}
