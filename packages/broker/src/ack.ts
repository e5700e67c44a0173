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

export interface GatherAcksOptions {
  /** Where the request goes, e.g. `control.reload`. */
  subject: string;
  /** Where answers are also published for everyone, e.g. `control.reload.ack`; optional. */
  ackSubject?: string;
  /** Request body; an object. The correlation field is added when missing. */
  data: Record<string, unknown>;
  /** Ids of the members that should answer (the live daemons); the wait ends once all of them did. */
  expected: readonly string[];
  timeoutMs: number;
  /** Field carrying the correlation id in request and ack; `request_id` when omitted. */
  correlationKey?: string;
  /** Field naming the answering member in an ack; `daemon_id` when omitted. */
  memberKey?: string;
}

export interface GatheredAcks {
  requestId: string;
  /** The first ack of each member, in arrival order (objects carrying the member key). */
  acks: Record<string, unknown>[];
  /** Expected members that did not answer within the timeout. */
  missing: string[];
  /** Members that answered without being expected (joined since the list was read). */
  unexpected: string[];
  elapsedMs: number;
}

/**
 * The cluster reload pattern: sends one request to every daemon (`requestMany`) and also listens on
 * `ackSubject`, keeping one ack per member id (by the correlation id), until every expected member answered
 * or `timeoutMs` passed. Nobody subscribed is no error here: every expected member is then missing.
 */
export async function gatherAcks(broker: Broker, opts: GatherAcksOptions): Promise<GatheredAcks> {
  const timeoutMs = checkTimeout(opts.timeoutMs);
  const key = opts.correlationKey ?? 'request_id';
  const memberKey = opts.memberKey ?? 'daemon_id';
  const requestId = String(opts.data[key] ?? randomUUID());
  const started = performance.now();
  const byMember = new Map<string, Record<string, unknown>>();
  const done = new AbortController();
  const take = (d: unknown): void => {
    if (typeof d !== 'object' || d === null) return;
    const ack = d as Record<string, unknown>;
    const member = ack[memberKey];
    if (ack[key] !== requestId || typeof member !== 'string' || byMember.has(member)) return;
    byMember.set(member, ack);
    if (opts.expected.length > 0 && opts.expected.every((id) => byMember.has(id))) done.abort();
  };
  const sub = opts.ackSubject ? broker.subscribe(opts.ackSubject, (msg) => take(msg.data)) : undefined;
  try {
    if (sub) await broker.flush();
    const replies = await broker
      .requestMany(
        opts.subject,
        { ...opts.data, [key]: requestId },
        {
          maxWaitMs: timeoutMs,
          signal: done.signal,
          until: (answers) => {
            take(answers[answers.length - 1]);
            return done.signal.aborted;
          },
        },
      )
      .catch((err: unknown) => {
        if (!isBrokerError(err, 'BROKER_NO_RESPONDERS')) throw err;
        return [];
      });
    // The local kinds return their answer without calling `until`.
    for (const reply of replies) take(reply);
  } finally {
    sub?.unsubscribe();
  }
  const expected = new Set(opts.expected);
  return {
    requestId,
    acks: [...byMember.values()],
    missing: opts.expected.filter((id) => !byMember.has(id)),
    unexpected: [...byMember.keys()].filter((id) => !expected.has(id)),
    elapsedMs: Math.round(performance.now() - started),
  };
}
