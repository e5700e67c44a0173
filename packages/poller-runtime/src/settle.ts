/**
 * Records how a tick ended: the outcome `runTick` returned becomes the tick's last write, with the schedule
 * from next-run and the errors and breaker from breaker, then metrics, logs and a failure alert.
 */
import { clampRetryAfter } from '@agent/guarded-http';
import { safeReason } from '@agent/poller-core';
import { sendFailureAlert } from './alert.js';
import { breakerAfterTransient, breakerClosed } from './breaker.js';
import { isLeaseLost, isStateStoreError } from './errors.js';
import { labelsOf } from './job-log.js';
import {
  runAfterPermanent,
  runAfterSuccess,
  runAfterTransient,
  runWhileOpen,
  type Jitter,
} from './next-run.js';
import { failure, type FailedOutcome, type TickOutcome } from './outcome.js';
import type { JobStatePatch, TickStatus } from './store.js';
import type { TickEnv, TickReport, TickRun } from './tick-types.js';
import { carriedAlertStamp, keepUnrecorded } from './unrecorded.js';

export const jitterOf = (env: TickEnv): Jitter => ({
  defaultJitterMs: env.settings().default_jitter_ms,
  random: env.random,
});

export async function settleTick(env: TickEnv, run: TickRun, outcome: TickOutcome): Promise<TickReport> {
  const counts = { items_seen: outcome.seen, items_dispatched: outcome.dispatched };
  switch (outcome.type) {
    case 'aborted':
      return { status: 'aborted', ...counts };
    case 'lease_lost':
      run.log.warn('poller tick lost its lease; its writes are discarded', { reason: outcome.reason });
      return { status: 'lease_lost', ...counts };
    case 'ok':
      try {
        return await settleSuccess(env, run, outcome);
      } catch (err) {
        return settleTick(env, run, failure(err, outcome, outcome.maxItems));
      }
    case 'failed':
      try {
        return await (outcome.cls === 'permanent' ? settlePermanent : settleTransient)(env, run, outcome);
      } catch (err) {
        // The job was replaced or removed, or another holder took over, while the failure was recorded.
        if (!isLeaseLost(err)) throw err;
        return settleTick(env, run, failure(err, outcome, outcome.maxItems));
      }
  }
}

async function settleSuccess(
  env: TickEnv,
  run: TickRun,
  outcome: Extract<TickOutcome, { type: 'ok' }>,
): Promise<TickReport> {
  const { def, state, log } = run;
  const now = env.clock.now();
  const patch: JobStatePatch = {
    ...carriedAlertStamp(env.unrecorded, def.id),
    ...breakerClosed(),
    lastStatus: 'ok',
    lastError: null,
    baselined: true,
    maxItems: outcome.maxItems,
    ...(outcome.cursor !== undefined ? { cursor: outcome.cursor } : {}),
    lastRunAt: now,
    ...(run.mode === 'scheduled' ? runAfterSuccess(def.schedule, state.nominalAt, now, jitterOf(env)) : {}),
  };
  await run.writer.writeLast({ ...outcome.seenOps, state: patch });
  env.unrecorded?.delete(def.id);
  tickMetrics(env, run, 'ok', patch);
  if (outcome.baseline) log.info('poller baseline recorded', { items: outcome.fresh });
  else if (outcome.dispatched || outcome.fresh > outcome.dispatched)
    log.info('poller items delivered', {
      delivered: outcome.dispatched,
      carried_over: outcome.fresh - outcome.dispatched,
    });
  return {
    status: 'ok',
    items_seen: outcome.seen,
    items_dispatched: outcome.dispatched,
    ...nextOf(run, patch),
  };
}

/** A Permanent error pauses the job and alerts once. */
async function settlePermanent(env: TickEnv, run: TickRun, outcome: FailedOutcome): Promise<TickReport> {
  const { def, state, log } = run;
  const now = env.clock.now();
  const reason = env.redact(safeReason(outcome.error));
  const patch: JobStatePatch = {
    ...carriedAlertStamp(env.unrecorded, def.id),
    paused: true,
    lastStatus: 'permanent',
    lastError: reason,
    lastRunAt: now,
    maxItems: outcome.maxItems,
    ...runAfterPermanent(def.schedule),
  };
  try {
    await run.writer.write({ state: patch });
  } catch (err) {
    // Not recorded, so not paused: the store failure is the tick's error, and the next tick retries.
    if (isStateStoreError(err)) return settleTick(env, run, failure(err, outcome, outcome.maxItems));
    throw err;
  }
  env.unrecorded?.delete(def.id);
  tickMetrics(env, run, 'permanent', patch);
  log.error('poller job paused after a permanent error', { reason });
  await sendFailureAlert(
    env,
    def,
    state,
    { cls: 'permanent', reason, errors: state.consecutiveErrors },
    run.writer,
    log,
  );
  return failureReport(run, 'permanent', outcome, reason, patch);
}

/**
 * A Transient error: one more consecutive error, a backoff or an open breaker. A store that cannot record
 * it: it counts in memory, and the job retries with the same backoff.
 */
async function settleTransient(env: TickEnv, run: TickRun, outcome: FailedOutcome): Promise<TickReport> {
  const { def, state, log } = run;
  const now = env.clock.now();
  const reason = env.redact(safeReason(outcome.error));
  const { patch, opened, errors } = transientPatch(env, run, outcome, now);
  Object.assign(patch, carriedAlertStamp(env.unrecorded, def.id), {
    lastError: reason,
    maxItems: outcome.maxItems,
  });
  let stored = true;
  try {
    // An alert (breaker opened) writes its cooldown after this; otherwise this is the last write.
    await (opened ? run.writer.write({ state: patch }) : run.writer.writeLast({ state: patch }));
    env.unrecorded?.delete(def.id);
  } catch (err) {
    if (!isStateStoreError(err)) throw err;
    stored = false;
    keepUnrecorded(env.unrecorded, def.id, patch);
  }
  const storeFailed = !stored || isStateStoreError(outcome.error);
  if (storeFailed) env.storeHealth?.tickFailed();
  tickMetrics(env, run, 'transient', patch);
  // A store outage is logged once for the whole store, not at every tick of every job.
  (storeFailed ? log.debug : log.warn).call(log, 'poller tick failed (transient)', {
    reason,
    consecutive_errors: errors,
    breaker: opened ? 'open' : 'closed',
    ...(stored ? {} : { recorded: 'no: the state store failed; kept in memory' }),
  });
  if (opened)
    await sendFailureAlert(
      env,
      def,
      { ...state, consecutiveErrors: errors },
      { cls: 'transient', reason, errors },
      run.writer,
      log,
    );
  return failureReport(run, 'transient', outcome, reason, patch);
}

/** Errors, breaker and (scheduled ticks) retry time after a Transient failure of the job in `run.state`. */
export function transientPatch(
  env: TickEnv,
  run: Pick<TickRun, 'def' | 'state' | 'mode'>,
  outcome: Pick<FailedOutcome, 'retryAfterMs'>,
  now: number,
): { patch: JobStatePatch; opened: boolean; errors: number } {
  const { def, state } = run;
  const waitHint = outcome.retryAfterMs === undefined ? 0 : clampRetryAfter(outcome.retryAfterMs);
  const breaker = breakerAfterTransient(state, env.settings().breaker_threshold, waitHint, now);
  const patch: JobStatePatch = { ...breaker.patch, lastStatus: 'transient', lastRunAt: now };
  if (run.mode === 'scheduled')
    Object.assign(
      patch,
      breaker.retryAt !== null
        ? runWhileOpen(def.schedule, state.nominalAt, breaker.retryAt, now, jitterOf(env))
        : runAfterTransient(def.schedule, breaker.errors, waitHint, now, jitterOf(env)),
    );
  return { patch, opened: breaker.opened, errors: breaker.errors };
}

function failureReport(
  run: TickRun,
  status: 'transient' | 'permanent',
  outcome: FailedOutcome,
  reason: string,
  patch: JobStatePatch,
): TickReport {
  return {
    status,
    items_seen: outcome.seen,
    items_dispatched: outcome.dispatched,
    error: reason,
    ...nextOf(run, patch),
  };
}

/** Scheduled ticks: the job's schedule after the tick's last write, so the caller need not read it. */
function nextOf(run: TickRun, patch: JobStatePatch): Pick<TickReport, 'next'> {
  if (run.mode !== 'scheduled') return {};
  return {
    next: {
      paused: patch.paused ?? run.state.paused,
      nextRunAt: patch.nextRunAt !== undefined ? patch.nextRunAt : run.state.nextRunAt,
    },
  };
}

function tickMetrics(env: TickEnv, run: TickRun, status: TickStatus, patch: JobStatePatch): void {
  const { metrics, clock } = env;
  const id = run.def.id;
  metrics.tick(labelsOf(run.def), status, clock.now() - run.startedAt);
  if (patch.consecutiveErrors !== undefined) metrics.consecutiveErrors(id, patch.consecutiveErrors);
  if (patch.breakerState !== undefined) metrics.breakerState(id, patch.breakerState);
  if (patch.paused !== undefined) metrics.paused(id, patch.paused);
  if (status === 'ok') metrics.lastSuccess(id, patch.lastRunAt ?? clock.now());
}
