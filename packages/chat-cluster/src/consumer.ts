/**
 * One owned partition's durable pull consumer. Messages are handed to the runtime one after the other in
 * stream order (`handle` resolves once the message is queued in its chat's session), which keeps each chat's
 * order. A handed message is acked when its turn ended or was skipped ('done'); while the turn waits or
 * runs, `working()` keeps AckWait from redelivering it.
 *
 * Messages not handed (fetched while pausing) and turns the runtime abandoned are kept: when the partition is
 * given up gracefully with no turn left in flight, they are nak'd in stream order so the next owner gets them
 * at once and in order; otherwise (a turn still running, the lease lost) everything unacked comes again after
 * AckWait, which the server redelivers in stream order.
 *
 * A turn this daemon could not run (its conversation memory unreadable: cut off from PostgreSQL) is handed
 * back ('retry') and nak'd with a delay, so that it runs again here or on the partition's next owner, up to
 * `MAX_TURN_DELIVERIES` deliveries. Only under that fault, later messages of its chat may be answered
 * before it: they are handed meanwhile.
 *
 * A message accepted under a newer config version than this daemon runs is held, with what follows it, until
 * this daemon has caught up, for at most half the AckWait (`config-version.ts`). A message the runtime
 * refuses (it does not run yet) is held too and offered again, never nak'd: redeliveries of several nak'd
 * messages can come out of order. Messages held behind it may come again after AckWait; a copy of a message
 * whose turn already ended here is acked, not run twice.
 */
import {
  JetStreamApiError,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import type { InboundOutcome, InboundSettle } from '@agent/agent-runtime';
import type { InboundMessage } from '@agent/channels';
import type { Logger } from '@agent/log';
import { setTimer, sleep, type TimerHandle } from '@agent/timers';
import { acceptedVersion, configWait, type ConfigWait } from './config-version.js';
import type { InboundNames } from './stream.js';

const NANOS_PER_MS = 1_000_000;
/** Messages one pull asks for; they wait in the client until handed, and AckWait runs from delivery. */
const PULL_BATCH = 32;
/** JetStream API error code. */
const CONSUMER_NOT_FOUND = 10014;
/**
 * Deliveries of one message, counted by the server (redeliveries after AckWait or a hand-over included): on
 * the earlier ones a turn that cannot read its memory hands the message back (`settle.canRetry`); on the last
 * one it answers whatever happens, with the apology at worst, so that a cluster whose PostgreSQL is away for
 * every daemon still answers each message once and never passes it round forever.
 */
const MAX_TURN_DELIVERIES = 3;
/**
 * Acked messages remembered per partition, newest kept: more than can be unacked at once (`MAX_ACK_PENDING`
 * of the stream, plus one pull), so that any copy still on its way is recognised.
 */
const DONE_REMEMBERED = 1024;
/** How often a message waiting for a newer config version looks again, and says it is alive every tenth. */
const CONFIG_LOOK_MS = 100;
const CONFIG_LOOKS_PER_BEAT = 10;

/**
 * Where a partition's messages go: resolves once queued; `settle` reports how the turn ended, and says through
 * `canRetry` whether the turn may hand the message back (`'retry'`) instead of apologizing.
 */
export type InboundHandler = (msg: InboundMessage, settle: InboundSettle) => Promise<void>;

export interface ConsumerSettings {
  ackWaitMs: number;
  /** Unacked messages the server lets one partition have at once. */
  maxAckPending: number;
}

/** Creates the partition's durable consumer, or brings it to these settings. */
export async function ensurePartitionConsumer(
  jsm: JetStreamManager,
  names: InboundNames,
  partition: number,
  s: ConsumerSettings,
): Promise<void> {
  const durable = names.consumer(partition);
  const wanted = {
    ack_wait: s.ackWaitMs * NANOS_PER_MS,
    max_ack_pending: s.maxAckPending,
    max_deliver: -1,
  };
  const existing = await jsm.consumers.info(names.stream, durable).catch((err: unknown) => {
    if (err instanceof JetStreamApiError && err.code === CONSUMER_NOT_FOUND) return null;
    throw err;
  });
  if (existing === null) {
    await jsm.consumers.add(names.stream, {
      durable_name: durable,
      filter_subject: names.subject(partition),
      ack_policy: 'explicit',
      deliver_policy: 'all',
      replay_policy: 'instant',
      ...wanted,
    });
    return;
  }
  const c = existing.config;
  if (c.ack_wait !== wanted.ack_wait || c.max_ack_pending !== wanted.max_ack_pending)
    await jsm.consumers.update(names.stream, durable, wanted);
}

/** The message body as published by ingress, or null when it is not one. */
function parseInbound(data: Uint8Array): InboundMessage | null {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return null;
  }
  if (v === null || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const fields = ['plugin', 'instance', 'chatId', 'senderId', 'text', 'messageId', 'receivedAt'] as const;
  if (!fields.every((f) => typeof o[f] === 'string')) return null;
  return {
    plugin: o['plugin'] as string,
    instance: o['instance'] as string,
    chatId: o['chatId'] as string,
    senderId: o['senderId'] as string,
    text: o['text'] as string,
    messageId: o['messageId'] as string,
    receivedAt: o['receivedAt'] as string,
  };
}

/** The last `size` stream sequences added, for membership tests. */
function recentSeqs(size: number): { add(seq: number): void; has(seq: number): boolean } {
  const seqs = new Set<number>();
  return {
    add(seq) {
      seqs.add(seq);
      // A Set iterates in insertion order: the first is the oldest.
      if (seqs.size > size) seqs.delete(seqs.values().next().value!);
    },
    has: (seq) => seqs.has(seq),
  };
}

/** `p`, or a rejection as soon as `signal` aborts (`p` goes on, its outcome unheard). */
function unlessWoken<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('stopped'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('stopped'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Sends an ack, nak or progress reply. Once the connection closed (a turn settling after `stop`) there is
 * nobody to tell: the message comes again after AckWait, as after a crash.
 */
function reply(send: () => void): void {
  try {
    send();
  } catch {
    // Closed connection: see above.
  }
}

export interface PartitionConsumerOptions {
  js: JetStreamClient;
  names: InboundNames;
  partition: number;
  ackWaitMs: number;
  /** Makes sure the durable consumer exists before each (re)start of fetching. */
  ensure: () => Promise<void>;
  handle: InboundHandler;
  /** How long to wait before handing messages again after the runtime refused one (or fetching failed). */
  retryMs: number;
  /** How long a message whose turn was handed back (`'retry'`) waits before it is delivered again. */
  handBackMs: number;
  /** Whether the NATS connection is up (fetch failures while it is down are not logged). */
  connected: () => boolean;
  /** The config version this daemon runs; without it, messages never wait for a newer one. */
  configVersion?: () => number;
  logger: Logger;
}

export interface PartitionConsumer {
  readonly partition: number;
  /** Handed messages whose turn has not been settled. */
  inFlight(): number;
  /** Resolves once no handed message is in flight. */
  settled(): Promise<void>;
  /** Stops fetching (messages fetched meanwhile are kept, not handed); resolves when fetching ended. */
  pause(): Promise<void>;
  /** Fetches again after `pause`. */
  resume(): void;
  /**
   * The partition is given up on purpose: stops fetching and heartbeats, and nak's the kept messages in
   * stream order when no turn is in flight (otherwise AckWait brings them back, in order).
   */
  giveBack(): Promise<void>;
  /** The lease is lost: stops at once; nothing more is confirmed or kept alive. */
  lose(): void;
}

interface Handed {
  msg: JsMsg;
}

type State = 'consuming' | 'paused' | 'gone';

export function startPartitionConsumer(o: PartitionConsumerOptions): PartitionConsumer {
  const log = o.logger.child({ partition: o.partition });
  const inFlight = new Map<number, Handed>();
  const kept = new Map<number, JsMsg>();
  let state: State = 'consuming';
  const consuming = (): boolean => state === 'consuming';
  let current: ConsumerMessages | undefined;
  let wake = new AbortController();
  let loop: Promise<void> = Promise.resolve();
  let idleWaiters: (() => void)[] = [];
  let heartbeat: TimerHandle | undefined;
  let failing = false;
  /** Whether the runtime refused the last offer (its refusals are logged once per streak). */
  let refusing = false;
  /** Messages whose turn ended here and were acked: a copy delivered again is confirmed, not run. */
  const done = recentSeqs(DONE_REMEMBERED);

  const beat = (): void => {
    for (const h of inFlight.values()) reply(() => h.msg.working());
    heartbeat = setTimer(beat, Math.max(100, Math.floor(o.ackWaitMs / 3)), { unref: true });
  };
  beat();

  const settledNow = (): void => {
    if (inFlight.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  };

  const keep = (msg: JsMsg): void => {
    if (state !== 'gone') kept.set(msg.seq, msg);
  };

  /**
   * Holds `msg` (kept alive, and what follows it in the client) while it needs a newer config version than
   * this daemon runs, for at most half the AckWait so that nothing behind it is redelivered meanwhile.
   */
  const awaitConfig = async (msg: JsMsg): Promise<void> => {
    const running = o.configVersion;
    if (!running || inFlight.has(msg.seq)) return;
    const accepted = acceptedVersion(msg.headers);
    const since = performance.now();
    const decide = (): ConfigWait =>
      configWait(accepted, running(), performance.now() - since, o.ackWaitMs / 2);
    let decision = decide();
    if (decision !== 'wait') return;
    const fields = { seq: msg.seq, accepted_version: accepted, running_version: running() };
    log.info('chat inbound message waits for this daemon to run its config version', fields);
    for (let look = 0; decision === 'wait' && consuming(); look++) {
      if (look % CONFIG_LOOKS_PER_BEAT === 0) reply(() => msg.working());
      await sleep(CONFIG_LOOK_MS, wake.signal);
      decision = decide();
    }
    if (decision === 'run-behind' && consuming())
      log.warn('chat inbound message runs on an older config version than it was accepted under', fields);
  };

  /**
   * Hands `msg` to the runtime. While the runtime refuses (it does not run yet), the message is held here,
   * kept alive, and offered again every `retryMs`: what follows waits behind it, in stream order. False when
   * the partition stopped consuming first (then the message is kept like any other not handed).
   */
  const handOver = async (msg: JsMsg): Promise<boolean> => {
    while (!(await deliver(msg))) {
      reply(() => msg.working());
      await sleep(o.retryMs, wake.signal);
      if (!consuming()) return false;
    }
    return true;
  };

  /** Hands one message; false when the runtime refused it. */
  const deliver = async (msg: JsMsg): Promise<boolean> => {
    kept.delete(msg.seq);
    const again = inFlight.get(msg.seq);
    if (again) {
      // Redelivered while its turn still runs (AckWait passed anyway): confirm through the newest delivery.
      again.msg = msg;
      return true;
    }
    const body = parseInbound(msg.data);
    if (body === null) {
      log.warn('chat inbound message malformed, dropped', { seq: msg.seq, subject: msg.subject });
      // No reason text: servers before 2.11 would not read it as a termination.
      reply(() => msg.term());
      return true;
    }
    const handed: Handed = { msg };
    inFlight.set(msg.seq, handed);
    let settled = false;
    const settleOnce = (outcome: InboundOutcome): void => {
      if (settled) return;
      settled = true;
      inFlight.delete(msg.seq);
      if (outcome === 'done') {
        done.add(msg.seq);
        reply(() => handed.msg.ack());
      } else if (outcome === 'retry') {
        // Also after the lease was lost: the next owner gets it after the delay instead of after AckWait.
        log.info('chat inbound message handed back, retrying', {
          seq: msg.seq,
          delivery: handed.msg.info.deliveryCount,
          retry_ms: o.handBackMs,
        });
        reply(() => handed.msg.nak(o.handBackMs));
      } else keep(handed.msg);
      settledNow();
    };
    const settle: InboundSettle = Object.assign(settleOnce, {
      canRetry: msg.info.deliveryCount < MAX_TURN_DELIVERIES,
    });
    try {
      await o.handle(body, settle);
      refusing = false;
      return true;
    } catch (err) {
      if (!settled) {
        settled = true;
        inFlight.delete(msg.seq);
        settledNow();
      }
      if (!refusing) {
        refusing = true;
        log.warn('chat inbound refused by the runtime, retrying', {
          seq: msg.seq,
          retry_ms: o.retryMs,
          error: err instanceof Error ? err.message : String(err),
        });
      }
      return false;
    }
  };

  const fetchOnce = async (): Promise<void> => {
    // Requests wait for their timeout while NATS is away: stopping does not wait for them.
    await unlessWoken(o.ensure(), wake.signal);
    const consumer = await unlessWoken(
      o.js.consumers.get(o.names.stream, o.names.consumer(o.partition)),
      wake.signal,
    );
    const messages = await consumer.consume({ max_messages: PULL_BATCH });
    current = messages;
    failing = false;
    if (state !== 'consuming') messages.stop();
    for await (const msg of messages) {
      if (state === 'gone') continue;
      if (done.has(msg.seq)) {
        // A copy of a message whose turn ended here (a redelivery that crossed its ack): confirmed, not run.
        reply(() => msg.ack());
        continue;
      }
      if (state === 'consuming') await awaitConfig(msg);
      if (state === 'consuming' && (await handOver(msg))) continue;
      keep(msg);
    }
    current = undefined;
  };

  const run = async (): Promise<void> => {
    while (consuming()) {
      try {
        await fetchOnce();
      } catch (err) {
        current = undefined;
        if (state !== 'consuming') break;
        // Once per streak, and not while disconnected: the connection's own log says that.
        if (!failing && o.connected()) {
          failing = true;
          log.warn('chat inbound partition fetch failed, retrying', {
            error: err instanceof Error ? err.message : String(err),
          });
        }
        await sleep(o.retryMs, wake.signal);
      }
    }
  };
  loop = run();

  const stopFetching = async (): Promise<void> => {
    wake.abort();
    current?.stop();
    await loop;
  };

  /** Nak's the kept messages in stream order: due at once, they come again before anything newer. */
  const returnKept = (): void => {
    for (const seq of Array.from(kept.keys()).sort((a, b) => a - b)) reply(() => kept.get(seq)?.nak());
    kept.clear();
  };

  return {
    partition: o.partition,
    inFlight: () => inFlight.size,
    settled: () =>
      inFlight.size === 0 || state === 'gone'
        ? Promise.resolve()
        : new Promise<void>((resolve) => idleWaiters.push(resolve)),
    async pause() {
      if (state === 'consuming') state = 'paused';
      await stopFetching();
    },
    resume() {
      if (state !== 'paused') return;
      returnKept();
      state = 'consuming';
      wake = new AbortController();
      loop = run();
    },
    async giveBack() {
      if (state === 'consuming') state = 'paused';
      await stopFetching();
      heartbeat?.cancel();
      if (inFlight.size === 0) returnKept();
      kept.clear();
      state = 'gone';
      settledNow();
    },
    lose() {
      state = 'gone';
      heartbeat?.cancel();
      kept.clear();
      wake.abort();
      current?.stop();
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    },
  };
}
