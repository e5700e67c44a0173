/**
 * What happens when a job's timer fires: take the lease, read the state under it, skip the slot while the
 * breaker is open or probe it, run the tick, record its outcome, and arm the next run.
 */
import { safeReason } from '@agent/poller-core';
import { breakerProbe, breakerSkipsUntil } from './breaker.js';
import { isStateStoreError } from './errors.js';
import { guardOf, withLock, type JobRuntime } from './job.js';
import { labelsOf, tickLogger } from './job-log.js';
import { acquireLease, type LeaseDeps, type LeaseSession } from './lease.js';
import { isDue, runAfterSchedulerError, runWhenLeaseFrees, runWhileOpen } from './next-run.js';
import type { Scheduler } from './scheduler.js';
import { leaseTtlMs } from './schedule.js';
import { jitterOf, settleTick } from './settle.js';
import { settleStoreFailure } from './store-failed-tick.js';
import { runTick } from './tick.js';
import type { TickEnv, TickReport } from './tick-types.js';
import { withUnrecorded } from './unrecorded.js';

/** Where the job's next run comes from: a time decided here, or its stored state. */
type NextArm = { at: number } | { fromStore: true };
const FROM_STORE: NextArm = { fromStore: true };

export interface ScheduledTickDeps {
  env: TickEnv;
  lease: LeaseDeps;
  scheduler: Scheduler;
  stopped(): boolean;
}

/** Runs the job's due tick after its earlier locked work, then arms the next run. */
export function wake(deps: ScheduledTickDeps, rt: JobRuntime): Promise<unknown> {
  const { env, scheduler, stopped } = deps;
  return withLock(rt, async () => {
    if (stopped() || rt.retired) return;
    let next: NextArm;
    try {
      next = await scheduledTick(deps, rt);
    } catch (err) {
      if (!isStateStoreError(err) || stopped() || rt.retired) {
        env.logger.error('poller scheduler error', { job_id: rt.def.id, reason: safeReason(err) });
        if (!stopped() && !rt.retired) scheduler.armAt(rt, runAfterSchedulerError(env.clock.now()));
        return;
      }
      // The lease grant or the state read failed: a Transient error of the job, retried with its backoff.
      next = fromReport(await settleStoreFailure(env, rt.def, err, guardOf(rt)));
    }
    if ('at' in next) scheduler.armAt(rt, next.at);
    // A store that cannot be read leaves the job without a timer otherwise.
    else await scheduler.arm(rt).catch(() => scheduler.armAt(rt, runAfterSchedulerError(env.clock.now())));
  });
}

const fromReport = (report: TickReport): NextArm =>
  report.next && !report.next.paused && report.next.nextRunAt !== null
    ? { at: report.next.nextRunAt }
    : FROM_STORE;

async function scheduledTick(deps: ScheduledTickDeps, rt: JobRuntime): Promise<NextArm> {
  const { env } = deps;
  const def = rt.def;
  const ttl = leaseTtlMs(def.schedule, env.settings().lease_ttl_factor, env.clock.now(), env.minLeaseTtlMs);
  // The lease first, then the state read under it: another holder may have run this slot meanwhile.
  const attempt = await acquireLease(deps.lease, def.id, ttl, guardOf(rt));
  // Another process is ticking: look again when its lease would expire.
  if (!('session' in attempt)) return { at: runWhenLeaseFrees(attempt.busyUntil, env.clock.now()) };
  const lease = attempt.session;
  try {
    return await underLease(deps, rt, lease);
  } finally {
    rt.tick = null;
    await lease.end();
  }
}

/** What a tick under a lease needs; `tickStarting` hears how late each tick starts after its slot (ms). */
type UnderLeaseDeps = Pick<ScheduledTickDeps, 'env' | 'stopped'> & {
  tickStarting?(lateMs: number): void;
};

/** The tick of a job whose lease this process holds (a timer's grant, or a claim in cluster mode). */
export async function underLease(
  deps: UnderLeaseDeps,
  rt: JobRuntime,
  lease: LeaseSession,
  /** The time due-ness is judged at: a claim's database time; default the runner's clock. */
  dueAt?: number,
): Promise<NextArm> {
  const { env } = deps;
  const def = rt.def;
  const stored = lease.state !== undefined ? lease.state : await env.store.load(def.id);
  // What this process could not record while the store failed (errors, breaker) counts too.
  const state = stored && withUnrecorded(env.unrecorded, stored);
  const now = env.clock.now();
  // Paused, not due (another process ran this slot, or an early wake), replaced, or shutting down.
  if (!state || !isDue(state, dueAt ?? now) || rt.retired || deps.stopped()) return FROM_STORE;
  const skipUntil = breakerSkipsUntil(state, now);
  if (skipUntil !== null) {
    // Open breaker: the slot is counted as skipped and the job sleeps until its next slot or the probe.
    const wakeAt = runWhileOpen(def.schedule, state.nominalAt, skipUntil, now, jitterOf(env));
    await lease.writeLast({ state: { ...wakeAt, lastStatus: 'skipped' } });
    env.metrics.tick(labelsOf(def), 'skipped');
    return { at: wakeAt.nextRunAt };
  }
  const tick = new AbortController();
  rt.tick = tick;
  lease.keepRenewing(tick);
  const probe = breakerProbe(state);
  if (probe) {
    await lease.write({ state: probe });
    env.metrics.breakerState(def.id, probe.breakerState!);
    env.logger.info('poller breaker half-open: probing', { job_id: def.id });
  }
  const run = {
    def,
    mode: 'scheduled' as const,
    state,
    signal: tick.signal,
    abort: (reason: unknown) => tick.abort(reason),
    writer: lease,
    log: tickLogger(env.logger, def),
    startedAt: env.clock.now(),
  };
  if (state.nextRunAt !== null) deps.tickStarting?.(run.startedAt - state.nextRunAt);
  return fromReport(await settleTick(env, run, await runTick(env, run)));
}
