/**
 * The scheduler of cluster mode, instead of a timer per job: claim up to the free capacity of due jobs
 * (the database decides due-ness), run each with the usual tick, sleep until the next due time (at most
 * `pollMaxMs`, ±10 % phase), and wake early on `wake()` (jobs made due here, or another daemon's hint). While
 * the daemon is not trusted (it could not heartbeat) it claims nothing and aborts its ticks.
 */
import type { Logger } from '@agent/log';
import { safeReason } from '@agent/poller-core';
import type { ClaimBatch, ClaimingStore, JobClaim } from './claiming-store.js';
import { claimLimit, claimSleepMs, skewOf } from './claim-decisions.js';
import { monotonicNow, type Clock } from './clock.js';
import type { ClusterMetrics } from './cluster-metrics.js';
import type { DbCorrectedClock } from './db-clock.js';
import { LeaseLostError } from './errors.js';
import type { JobRuntime } from './job.js';
import { createLoopSleep } from './loop-sleep.js';
import type { DueHint } from './runner-api.js';

export interface ClaimLoopDeps {
  store: ClaimingStore;
  holderId: string;
  /** The host clock (timers, latency); `dbClock` is corrected at every claim. */
  clock: Clock;
  dbClock: DbCorrectedClock;
  metrics: ClusterMetrics;
  logger: Logger;
  random: () => number;
  jobs: ReadonlyMap<string, JobRuntime>;
  configVersion(): number;
  trusted(): boolean;
  maxConcurrentTicks: number;
  pollMaxMs: number;
  /**
   * Runs the claimed job's tick under its lease (`asked`: when the claim was sent, monotonic); resolves to
   * the job's next run time (database clock) when the tick decided one.
   */
  runClaim(rt: JobRuntime, claim: JobClaim, asked: number): Promise<number | null>;
  /** A claimed job handed back at once is due again: the other daemons may take it. */
  announceDue(hint: DueHint): void;
}

export interface ClaimLoop {
  start(): void;
  /**
   * Claims at once (jobs became due: resume, reset, reconcile), or by `dueAt` (database clock) when given
   * (another daemon's hint), sooner than the current sleep would.
   */
  wake(dueAt?: number): void;
  /** Stops claiming; resolves when the loop is out of its current round. */
  stop(): Promise<void>;
  inFlight(): number;
}

/** One claim statement, timed, the clock skew it shows recorded; `null` when it failed (logged once). */
async function claimTimed(
  deps: ClaimLoopDeps,
  limit: number,
  health: { failing: boolean },
): Promise<ClaimBatch | null> {
  const { clock, metrics, logger } = deps;
  const asked = monotonicNow(clock);
  const sent = clock.now();
  let batch: ClaimBatch;
  try {
    batch = await deps.store.claimDue(deps.holderId, { limit, configVersion: deps.configVersion() });
  } catch (err) {
    metrics.claims('error');
    if (!health.failing) logger.error('poller claim failed; retrying', { reason: safeReason(err) });
    health.failing = true;
    return null;
  }
  if (health.failing) logger.warn('poller claims work again');
  health.failing = false;
  metrics.claimLatency(monotonicNow(clock) - asked);
  const skew = skewOf(batch.dbNow, sent, clock.now());
  deps.dbClock.observe(skew);
  metrics.clockSkew(skew);
  if (batch.claims.length) metrics.claims('claimed', batch.claims.length);
  else metrics.claims('empty');
  return batch;
}

export function createClaimLoop(deps: ClaimLoopDeps): ClaimLoop {
  const { store, clock, metrics, logger } = deps;
  let running = false;
  let inFlight = 0;
  const sleeper = createLoopSleep(clock);
  let loopDone: Promise<void> = Promise.resolve();
  const health = { failing: false };
  /** A tick ended with its next run at `dbAt` (database clock): look again by then, not after pollMaxMs. */
  const lookAgainAt = (dbAt: number) => sleeper.lookBy(dbAt - deps.dbClock.skewMs());
  const wake = (dueAt?: number) =>
    dueAt === undefined || dueAt <= deps.dbClock.clock.now() ? sleeper.wake() : lookAgainAt(dueAt);

  const abortAll = (reason: Error) => {
    for (const rt of deps.jobs.values()) rt.tick?.abort(reason);
  };

  const startTick = (claim: JobClaim, asked: number) => {
    const rt = deps.jobs.get(claim.jobId);
    // Defined by a version this daemon does not run (it is being replaced here): hand the job back.
    if (!rt || rt.retired) {
      void store
        .releaseLease(claim.jobId, claim.grant)
        .then(() => deps.announceDue({ jobIds: [claim.jobId], dueAt: null }))
        // Unreleased, the job waits for the lease to run out; say so rather than nothing.
        .catch((err: unknown) =>
          logger.warn(
            'poller lease not handed back: the store failed; the job waits for its lease to expire',
            {
              job_id: claim.jobId,
              reason: safeReason(err),
            },
          ),
        );
      return;
    }
    inFlight++;
    metrics.jobsHeld(inFlight);
    void deps
      .runClaim(rt, claim, asked)
      .then((next) => {
        if (next !== null) lookAgainAt(next);
      })
      .catch((err: unknown) =>
        logger.error('poller claimed tick failed', { job_id: claim.jobId, reason: safeReason(err) }),
      )
      .finally(() => {
        const wasFull = inFlight >= deps.maxConcurrentTicks;
        inFlight--;
        metrics.jobsHeld(inFlight);
        if (wasFull) sleeper.wake();
      });
  };

  /** One round: claims what it may and returns how long to sleep. */
  const round = async (): Promise<number> => {
    if (!deps.trusted()) {
      metrics.claims('untrusted');
      abortAll(new LeaseLostError('this daemon could not heartbeat: its ticks stop'));
      return deps.pollMaxMs;
    }
    const limit = claimLimit(deps.maxConcurrentTicks, inFlight);
    if (limit === 0) return deps.pollMaxMs;
    const asked = monotonicNow(clock);
    const batch = await claimTimed(deps, limit, health);
    if (!batch) return deps.pollMaxMs;
    for (const claim of batch.claims) startTick(claim, asked);
    return claimSleepMs({
      ...batch,
      claimed: batch.claims.length,
      limit,
      pollMaxMs: deps.pollMaxMs,
      random: deps.random(),
    });
  };

  const loop = async () => {
    // `stop` clears `running` while a round or a sleep is awaited.
    // oxlint-disable-next-line no-unmodified-loop-condition
    while (running) {
      sleeper.beginRound();
      const ms = await round();
      if (running) await sleeper.sleep(ms);
    }
  };

  return {
    start() {
      if (running) return;
      running = true;
      loopDone = loop();
    },
    wake,
    async stop() {
      running = false;
      wake();
      await loopDone;
    },
    inFlight: () => inFlight,
  };
}
