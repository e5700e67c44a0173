/**
 * Starting and stopping one job in this process. At start the stored state is brought in line with the
 * definition: a changed source baselines again, a changed `at` fires again, a changed schedule starts over.
 */
import { LeaseLostError } from './errors.js';
import { newJob, waitFor, type JobRuntime } from './job.js';
import { labelsOf } from './job-log.js';
import { runAtStart } from './next-run.js';
import type { ReloadPlan } from './plan.js';
import type { Scheduler } from './scheduler.js';
import { jitterOf } from './settle.js';
import { sameSource } from './source-key.js';
import {
  emptyJobState,
  type CommitOps,
  type JobState,
  type JobStatePatch,
  type StartWrite,
} from './store.js';
import { statesOf } from './states-of.js';
import type { TickEnv } from './tick-types.js';
import type { JobDefinition } from './validate.js';

export interface LifecycleDeps {
  env: TickEnv;
  jobs: Map<string, JobRuntime>;
  scheduler: Scheduler;
  stopped(): boolean;
}

/** The writes that bring a stored state in line with `def` at start (`paused_on_boot` on a fresh start). */
export function startOps(
  env: TickEnv,
  def: JobDefinition,
  st: JobState,
  how: { applyPausedOnBoot: boolean; now: number },
): CommitOps & { state: JobStatePatch } {
  const ops: CommitOps & { state: JobStatePatch } = { state: {} };
  const patch = ops.state;
  if (st.sourceKey !== def.sourceKey && sameSource(st.sourceKey, def.sourceKey)) {
    // A key stored before keys were hashed, for the same source: rewritten, the cursor kept.
    patch.sourceKey = def.sourceKey;
  } else if (st.sourceKey !== def.sourceKey) {
    // The source changed: the old cursor and seen ids mean nothing for the new one.
    Object.assign(patch, { sourceKey: def.sourceKey, cursor: null, baselined: false, maxItems: 0 });
    ops.clearSeen = true;
    env.logger.info('poller source changed: the job will baseline again', { job_id: def.id });
  }
  const s = def.schedule;
  let atFired = st.atFired;
  if (s.type === 'at' && st.atFired !== null && st.atFired !== s.key) {
    Object.assign(patch, { atFired: null, paused: false });
    atFired = null;
  }
  if (how.applyPausedOnBoot && def.pausedOnBoot) patch.paused = true;
  Object.assign(patch, runAtStart(s, st, atFired, how.now, jitterOf(env)));
  return ops;
}

/** The job's gauges from its stored state, and its timer. */
function armStarted(deps: LifecycleDeps, rt: JobRuntime, state: JobState): void {
  const { metrics } = deps.env;
  metrics.consecutiveErrors(rt.def.id, state.consecutiveErrors);
  metrics.breakerState(rt.def.id, state.breakerState);
  metrics.paused(rt.def.id, state.paused);
  if (!deps.stopped()) deps.scheduler.armFrom(rt, state);
}

async function startJob(deps: LifecycleDeps, def: JobDefinition, applyPausedOnBoot: boolean): Promise<void> {
  const { store } = deps.env;
  const rt = newJob(def);
  deps.jobs.set(def.id, rt);
  const now = deps.env.clock.now();
  const st = await store.init(def.id, { sourceKey: def.sourceKey });
  await store.commit(def.id, startOps(deps.env, def, st, { applyPausedOnBoot, now }));
  armStarted(deps, rt, (await store.load(def.id))!);
}

/**
 * Starts jobs: one read of their stored rows, their start-up writes in one transaction, one read back, then
 * their timers. No per-job transaction, so 10,000 jobs start in well under a second. A store without
 * `commitStart` starts them one by one.
 */
export async function startJobs(
  deps: LifecycleDeps,
  defs: readonly JobDefinition[],
  applyPausedOnBoot: boolean,
): Promise<void> {
  const { store } = deps.env;
  if (!store.commitStart) {
    for (const def of defs) await startJob(deps, def, applyPausedOnBoot);
    return;
  }
  if (defs.length === 0) return;
  const now = deps.env.clock.now();
  const ids = defs.map((d) => d.id);
  const stored = await statesOf(store, ids);
  const writes = defs.map((def): StartWrite => {
    const initial = { sourceKey: def.sourceKey };
    const st = stored.get(def.id) ?? { ...emptyJobState(def.id), ...initial };
    return { jobId: def.id, initial, ops: startOps(deps.env, def, st, { applyPausedOnBoot, now }) };
  });
  const started = defs.map((def) => {
    const rt = newJob(def);
    deps.jobs.set(def.id, rt);
    return rt;
  });
  await store.commitStart(writes);
  const after = await statesOf(store, ids);
  for (const rt of started) armStarted(deps, rt, after.get(rt.def.id)!);
}

/**
 * Retires the job: its tick is aborted and can no longer write, except the record of an item the channel
 * accepted meanwhile on a replace (see `guardOf`); the lease is revoked once that tick ended, so its fence
 * holds for that record. `remove` also deletes the job's state and series.
 */
async function stopJob(deps: LifecycleDeps, rt: JobRuntime, remove: boolean): Promise<void> {
  const { store, metrics } = deps.env;
  rt.retired = remove ? 'removed' : 'replaced';
  rt.tick?.abort(new LeaseLostError(`job ${rt.def.id} was replaced or removed`));
  deps.scheduler.disarm(rt);
  await waitFor([rt]);
  await store.revokeLease(rt.def.id).catch(() => {});
  if (remove) {
    await store.deleteJob(rt.def.id);
    deps.env.unrecorded?.delete(rt.def.id);
    metrics.removeJob(labelsOf(rt.def));
  }
  deps.jobs.delete(rt.def.id);
}

/** Applies a validated reload plan: remove, then replace, then add. */
export async function applyPlan(
  deps: LifecycleDeps,
  plan: ReloadPlan,
  valid: readonly JobDefinition[],
): Promise<void> {
  const { jobs } = deps;
  const nextById = new Map(valid.map((d) => [d.id, d]));
  for (const id of plan.remove) await stopJob(deps, jobs.get(id)!, true);
  for (const id of plan.replace) {
    const old = jobs.get(id)!;
    const def = nextById.get(id)!;
    await stopJob(deps, old, false);
    // Other labels: the old series would linger.
    if (old.def.kind.kind !== def.kind.kind || old.def.agent !== def.agent)
      deps.env.metrics.removeJob(labelsOf(old.def));
  }
  await startJobs(
    deps,
    plan.replace.map((id) => nextById.get(id)!),
    false,
  );
  await startJobs(
    deps,
    plan.add.map((id) => nextById.get(id)!),
    true,
  );
}

/** Shutdown: every timer disarmed, every tick aborted, and their work waited for. */
export async function stopAll(deps: LifecycleDeps): Promise<void> {
  for (const rt of deps.jobs.values()) {
    deps.scheduler.disarm(rt);
    rt.tick?.abort(new Error('shutdown'));
  }
  await waitFor(deps.jobs.values());
}
