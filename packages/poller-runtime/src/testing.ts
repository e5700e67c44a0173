/**
 * @agent/poller-runtime/testing — for runner tests and kind packages' end-to-end tests: a fake clock, a
 * recording dispatcher, an in-memory state store, a minimal config snapshot builder and the real service
 * around kinds (`createServiceHarness`).
 */
import { phaseMs } from './schedule.js';
import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import type { PollerKind } from '@agent/poller-core';
import { Registry } from 'prom-client';
import type { Clock, TimerCallback } from './clock.js';
import { createMemoryStateStore } from './memory-store.js';
import { createKindRegistry } from './registry.js';
import type { DeliveryRequest, Dispatcher } from './tick-types.js';
import { createRunner } from './runner.js';
import type { Runner } from './runner-api.js';
import type { StateStore } from './store.js';
import { createTestSnapshot, type TestJobSpec, type TestSnapshotOptions } from './test-snapshot.js';
import type { ConfigSnapshot } from '@agent/config-snapshot';

export {
  createMemoryStateStore,
  type MemoryStateStore,
  type MemoryStateStoreOptions,
} from './memory-store.js';

// ---- fake clock ------------------------------------------------------------------------------------

export interface FakeClock extends Clock {
  monotonicNow(): number;
  /** Moves time forward, firing due timers in order and letting promises settle between them. */
  advance(ms: number): Promise<void>;
  /** Advances to the next pending timer (if any) and fires it. */
  next(): Promise<boolean>;
  /** Due time of the earliest pending timer (wall clock). */
  nextTimerAt(): number | null;
  pendingTimers(): number;
  /**
   * Sets the wall clock `ms` forward (negative: back), as an NTP step or an operator would. Timers and
   * `monotonicNow()` do not move, as with real timers.
   */
  jumpWall(ms: number): void;
}

/** Lets queued promise callbacks and immediates run. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

export function createFakeClock(start: number | string = '2026-01-01T00:00:00Z'): FakeClock {
  // Timers run on the monotonic time; the wall clock is it plus an offset that jumpWall moves.
  let mono = 0;
  let wallOffset = typeof start === 'string' ? Date.parse(start) : start;
  let seq = 0;
  const timers = new Map<number, { at: number; seq: number; cb: TimerCallback }>();
  const earliest = () => {
    let best: [number, { at: number; seq: number; cb: TimerCallback }] | null = null;
    for (const e of timers)
      if (!best || e[1].at < best[1].at || (e[1].at === best[1].at && e[1].seq < best[1].seq)) best = e;
    return best;
  };
  const fire = async (id: number) => {
    const t = timers.get(id)!;
    timers.delete(id);
    mono = Math.max(mono, t.at);
    let r: unknown;
    try {
      r = t.cb();
    } catch {
      r = undefined;
    }
    if (r instanceof Promise) await Promise.race([r.catch(() => {}), settle()]);
    await settle();
  };
  const clock: FakeClock = {
    now: () => mono + wallOffset,
    monotonicNow: () => mono,
    setTimer(cb, ms) {
      const id = ++seq;
      timers.set(id, { at: mono + Math.max(0, ms), seq: id, cb });
      return id;
    },
    clearTimer(h) {
      timers.delete(h as number);
    },
    async advance(ms) {
      const target = mono + ms;
      await settle();
      for (;;) {
        const e = earliest();
        if (!e || e[1].at > target) break;
        await fire(e[0]);
      }
      mono = Math.max(mono, target);
      await settle();
    },
    async next() {
      await settle();
      const e = earliest();
      if (!e) return false;
      await fire(e[0]);
      return true;
    },
    nextTimerAt() {
      const e = earliest();
      return e ? e[1].at + wallOffset : null;
    },
    pendingTimers: () => timers.size,
    jumpWall(ms) {
      wallOffset += ms;
    },
  };
  return clock;
}

// ---- dispatcher ------------------------------------------------------------------------------------

export interface TestDispatcher extends Dispatcher {
  /** Every accepted delivery, in order. */
  readonly deliveries: DeliveryRequest[];
  /** Texts of accepted deliveries to `channel` (all channels when omitted). */
  texts(channel?: string): string[];
  /** The next `n` deliveries fail with `error` (default: a network-like error). */
  failNext(n?: number, error?: unknown): void;
  /** Deliveries matching `predicate` fail until cleared with `failWhen(null)`. */
  failWhen(predicate: ((m: DeliveryRequest) => boolean) | null, error?: unknown): void;
  /** Number of attempts, failed ones included. */
  attempts(): number;
}

export function createTestDispatcher(): TestDispatcher {
  const deliveries: DeliveryRequest[] = [];
  let failCount = 0;
  let failError: unknown = null;
  let predicate: ((m: DeliveryRequest) => boolean) | null = null;
  let predicateError: unknown = null;
  let attempts = 0;
  return {
    deliveries,
    async deliver(m) {
      attempts++;
      if (failCount > 0) {
        failCount--;
        throw failError ?? Object.assign(new Error('channel unavailable'), { code: 'CHANNEL_UNAVAILABLE' });
      }
      if (predicate?.(m))
        throw (
          predicateError ?? Object.assign(new Error('channel unavailable'), { code: 'CHANNEL_UNAVAILABLE' })
        );
      deliveries.push({ ...m, signal: undefined });
    },
    texts: (channel) =>
      deliveries.filter((d) => channel === undefined || d.channel === channel).map((d) => d.text),
    failNext(n = 1, error) {
      failCount = n;
      failError = error ?? null;
    },
    failWhen(p, error) {
      predicate = p;
      predicateError = error ?? null;
    },
    attempts: () => attempts,
  };
}

/** A fresh prom-client registry (services never use the global one). */
export function createMetricsRegistry(): Registry {
  return new Registry();
}

/** The recording logger of `@agent/log`, re-exported so kind packages need no extra dependency. */
export { createMemoryLogger, type MemoryLogger };

export { createTestSnapshot, type TestJobSpec, type TestSnapshotOptions };

export interface ServiceHarnessOptions extends Omit<TestSnapshotOptions, 'jobs'> {
  jobs: TestJobSpec[];
  /** A store to use (e.g. a SQLite store on a temporary file); default an in-memory store on the fake clock. */
  store?: StateStore | ((clock: FakeClock) => StateStore);
  logger?: MemoryLogger;
  /**
   * Start of the fake clock. When the first job runs `every_secs`, the clock starts at the first point of
   * that job's grid at or after it (grids have a per-job phase), so `advance(interval)` after its first run
   * reaches exactly its next slot.
   */
  start?: number | string;
}

/** `start` moved forward onto the grid of `job`'s `every_secs` schedule, if it has one. */
function onGridOf(job: TestJobSpec | undefined, start: number): number {
  const secs = (job?.schedule as { every_secs?: unknown } | undefined)?.every_secs;
  if (job === undefined || typeof secs !== 'number' || !(secs >= 1)) return start;
  const step = secs * 1000;
  return start + ((((phaseMs(job.id, step) - start) % step) + step) % step);
}

export interface ServiceHarness {
  clock: FakeClock;
  store: StateStore;
  dispatcher: TestDispatcher;
  logger: MemoryLogger;
  snapshot: ConfigSnapshot;
  service: Runner;
  /** Moves the fake clock and waits for the ticks it started. */
  advance(ms: number): Promise<void>;
  /** Stops the service and closes the store. */
  close(): Promise<void>;
}

/**
 * The real poller service around one or more kinds: registry, runner, scheduler and store, with a fake clock,
 * no jitter, no scheduling rounds (every run at its exact time), the test dispatcher and a recording logger.
 * For a kind package's own end-to-end tests.
 */
export function createServiceHarness(
  kinds: PollerKind | readonly PollerKind[],
  opts: ServiceHarnessOptions,
): ServiceHarness {
  const { jobs, store: storeOpt, logger: loggerOpt, start, settings, ...snapshotOpts } = opts;
  const from = typeof start === 'string' ? Date.parse(start) : (start ?? Date.parse('2026-01-01T00:00:00Z'));
  const clock = createFakeClock(onGridOf(jobs[0], from));
  const store =
    typeof storeOpt === 'function'
      ? storeOpt(clock)
      : (storeOpt ?? createMemoryStateStore({ now: clock.now }));
  const dispatcher = createTestDispatcher();
  const logger = loggerOpt ?? createMemoryLogger();
  const snapshot = createTestSnapshot({
    ...snapshotOpts,
    settings: { default_jitter_ms: 0, ...settings },
    jobs,
  });
  const service = createRunner({
    snapshot,
    registry: createKindRegistry(Array.isArray(kinds) ? kinds : [kinds]),
    store,
    dispatcher,
    metrics: createMetricsRegistry(),
    logger,
    clock,
    random: () => 0,
    holderId: 'test-holder',
    roundMs: 0,
  });
  return {
    clock,
    store,
    dispatcher,
    logger,
    snapshot,
    service,
    async advance(ms) {
      await clock.advance(ms);
      await service.idle();
    },
    async close() {
      await service.stop();
      await store.close();
    },
  };
}
