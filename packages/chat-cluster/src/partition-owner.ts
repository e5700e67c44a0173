/**
 * This daemon's share of the inbound partitions. Every round renews all its leases in one statement, reads
 * who holds what, plans (`planPartitions`), takes free partitions and drains the ones to give up; a drained
 * partition (no turn in flight, or past the drain deadline) is given back and its lease ended at once.
 *
 * Each lease is trusted until its last confirming round's start plus the TTL minus a margin, on the
 * monotonic clock: past that, its consumer stops at once, before another daemon may take the partition.
 */
import type { Logger } from '@agent/log';
import { setTimer, type TimerHandle } from '@agent/timers';
import type { PartitionConsumer } from './consumer.js';
import type { PartitionLease, PartitionLeases } from './partition-leases.js';
import { planPartitions } from './partition-plan.js';

const monotonicMs = (): number => performance.now();

export interface PartitionOwnerOptions {
  partitions: number;
  holderId: string;
  leases: PartitionLeases;
  liveMembers: () => Promise<number>;
  ttlMs: number;
  /** How long a partition being given up may wait for its turns in flight before it goes anyway. */
  drainTimeoutMs: number;
  /** Starts fetching a partition this daemon just took. */
  consume: (partition: number) => PartitionConsumer;
  /**
   * Sends what the consumers wrote (acks, naks) before a lease is ended; true once the server confirmed it
   * got them, false when it did not answer in time (or the connection is down).
   */
  flush: () => Promise<boolean>;
  onOwnedChange?: ((owned: number[]) => void) | undefined;
  logger: Logger;
}

export interface PartitionOwner {
  owned(): number[];
  /** Runs one round now (or waits for the running one). */
  round(): Promise<void>;
  /** Stops fetching on every partition and takes no new ones; leases are kept. */
  pause(): Promise<void>;
  /** Stops the rounds, gives every partition back and ends its lease at once. */
  stop(): Promise<void>;
}

interface Held {
  lease: PartitionLease;
  consumer: PartitionConsumer;
  trust: TimerHandle;
  /** Set while draining: the monotonic time it goes anyway. */
  drainUntil?: number;
}

/** Default trust margin: what the design allows between renewal and expiry (2 s), less for short TTLs. */
function trustMarginMs(ttlMs: number): number {
  return Math.min(2000, Math.max(250, Math.round(ttlMs / 5)));
}

export function startPartitionOwner(o: PartitionOwnerOptions): PartitionOwner {
  const held = new Map<number, Held>();
  const freeRounds = new Map<number, number>();
  const trustMs = o.ttlMs - trustMarginMs(o.ttlMs);
  const intervalMs = Math.max(100, Math.round(o.ttlMs / 3));
  let live = 1;
  let orphanedAtLive: number | undefined;
  let paused = false;
  let stopped = false;
  let failing = false;
  let running: Promise<void> | undefined;
  let timer: TimerHandle | undefined;

  const owned = (): number[] => Array.from(held.keys()).sort((a, b) => a - b);
  const changed = (): void => o.onOwnedChange?.(owned());

  const trust = (p: number, startedAt: number): TimerHandle =>
    setTimer(() => lose(p, 'trust window passed without a renewal'), startedAt + trustMs - monotonicMs(), {
      unref: true,
    });

  const lose = (p: number, why: string): void => {
    const h = held.get(p);
    if (!h) return;
    held.delete(p);
    h.trust.cancel();
    h.consumer.lose();
    o.logger.warn('chat inbound partition lost', { partition: p, term: h.lease.term, reason: why });
    changed();
  };

  const giveBack = async (ps: number[]): Promise<void> => {
    const gone = ps.flatMap((p) => {
      const h = held.get(p);
      if (!h) return [];
      held.delete(p);
      h.trust.cancel();
      return [h];
    });
    if (gone.length === 0) return;
    await Promise.all(gone.map((h) => h.consumer.giveBack()));
    const partitions = gone.map((h) => h.lease.partition);
    if (!(await o.flush().catch(() => false))) {
      // Ended now, the next owner could get messages whose acks are still on their way and answer them
      // again: the leases lapse at their expiry instead, by when the acks went through or never will.
      o.logger.warn('chat inbound partitions left to expire: the server did not confirm their acks', {
        partitions,
      });
      changed();
      return;
    }
    await o.leases.release(gone.map((h) => h.lease)).catch((err: unknown) =>
      o.logger.warn('chat inbound partition release failed: they free up at lease expiry', {
        partitions,
        error: err instanceof Error ? err.message : String(err),
      }),
    );
    changed();
  };

  const renew = async (): Promise<void> => {
    const startedAt = monotonicMs();
    const mine = Array.from(held.values(), (h) => h.lease);
    const kept = new Set((await o.leases.renew(mine)).map((l) => l.partition));
    for (const lease of mine) {
      const h = held.get(lease.partition);
      if (!h || h.lease.term !== lease.term) continue;
      if (kept.has(lease.partition)) {
        h.trust.cancel();
        h.trust = trust(lease.partition, startedAt);
      } else lose(lease.partition, 'lease taken or expired');
    }
  };

  const take = async (ps: number[]): Promise<boolean> => {
    if (ps.length === 0) return false;
    const startedAt = monotonicMs();
    const won = await o.leases.acquire(ps);
    for (const lease of won) {
      // Recorded even when stopping meanwhile: `stop` gives back whatever the running round took.
      const consumer = o.consume(lease.partition);
      held.set(lease.partition, { lease, consumer, trust: trust(lease.partition, startedAt) });
      if (paused) await consumer.pause();
    }
    if (won.length > 0) {
      o.logger.info('chat inbound partitions taken', { partitions: won.map((l) => l.partition) });
      changed();
    }
    return won.length > 0;
  };

  const drain = async (wanted: number[]): Promise<void> => {
    const want = new Set(wanted);
    const now = monotonicMs();
    for (const [p, h] of held) {
      if (want.has(p) && h.drainUntil === undefined) {
        h.drainUntil = now + o.drainTimeoutMs;
        await h.consumer.pause();
        // Hand it over as soon as its last turn ends, not at the next round.
        if (h.consumer.inFlight() > 0) void h.consumer.settled().then(() => void round());
      } else if (!want.has(p) && h.drainUntil !== undefined) {
        delete h.drainUntil;
        if (!paused) h.consumer.resume();
      }
    }
    const done = Array.from(held)
      .filter(([, h]) => h.drainUntil !== undefined && (h.consumer.inFlight() === 0 || now >= h.drainUntil))
      .map(([p]) => p);
    if (done.length > 0) {
      o.logger.info('chat inbound partitions handed over', { partitions: done });
      await giveBack(done);
    }
  };

  const once = async (): Promise<void> => {
    try {
      await renew();
      if (stopped) return;
      const holders = await o.leases.holders();
      live = await o.liveMembers().catch(() => live);
      const others = new Map(Array.from(holders).filter(([p]) => !held.has(p)));
      for (let p = 0; p < o.partitions; p++) {
        if (held.has(p) || others.has(p)) freeRounds.delete(p);
        else freeRounds.set(p, (freeRounds.get(p) ?? 0) + 1);
      }
      const mine = owned();
      const plan = planPartitions({
        partitions: o.partitions,
        live,
        holderId: o.holderId,
        mine,
        draining: mine.filter((p) => held.get(p)?.drainUntil !== undefined),
        others,
        freeRounds,
        taking: !paused && !stopped,
        orphanedAtLive,
      });
      if ((await take(plan.take)) && plan.takesOrphans) orphanedAtLive = live;
      if (!stopped) await drain(plan.drain);
      if (failing) o.logger.info('chat inbound partition leases renew again');
      failing = false;
    } catch (err) {
      if (!failing)
        o.logger.warn('chat inbound partition round failed: leases lapse unless a later round renews them', {
          error: err instanceof Error ? err.message : String(err),
        });
      failing = true;
    }
  };

  const round = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (running) return running;
    timer?.cancel();
    running = once().finally(() => {
      running = undefined;
      if (!stopped) timer = setTimer(() => void round(), intervalMs, { unref: true });
    });
    return running;
  };

  return {
    owned,
    round,
    async pause() {
      paused = true;
      await Promise.all(Array.from(held.values(), (h) => h.consumer.pause()));
    },
    async stop() {
      stopped = true;
      timer?.cancel();
      await running;
      await giveBack(owned());
    },
  };
}
