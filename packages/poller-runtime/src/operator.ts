/**
 * The operator's commands on one job: list, show, a manual run (no lease, never overlapping a tick of the
 * job in this process), pause, resume and reset.
 */
import { statesOf } from './states-of.js';
import { PollerError } from '@agent/poller-core';
import { breakerClosed } from './breaker.js';
import { guardOf, withLock, type JobRuntime } from './job.js';
import { tickLogger } from './job-log.js';
import { detailOf, summaryOf } from './job-view.js';
import { runAtResume } from './next-run.js';
import type { RejectedJobs } from './rejected.js';
import type { OperatorApi, RunResult } from './runner-api.js';
import type { Scheduler } from './scheduler.js';
import { jitterOf, settleTick } from './settle.js';
import type { CommitOps, JobState, JobStatePatch } from './store.js';
import { runTick } from './tick.js';
import type { TickEnv, TickRun, TickWriter } from './tick-types.js';
import { withUnrecorded } from './unrecorded.js';

export interface OperatorDeps {
  env: TickEnv;
  jobs: ReadonlyMap<string, JobRuntime>;
  scheduler: Scheduler;
  rejected: RejectedJobs;
  stopped(): boolean;
}

export function unknownJob(id: string): PollerError {
  return new PollerError('POLLER_UNKNOWN_JOB', `no poller job "${id}"; list the jobs with pollers list`);
}

/** Writes of a job without a lease (manual runs, operator commands): checked against replace and remove. */
function unfencedWriter(env: TickEnv, rt: JobRuntime): TickWriter {
  const guard = guardOf(rt);
  const write = async (ops: CommitOps) => {
    guard(ops);
    await env.store.commit(rt.def.id, ops, null);
  };
  return { fence: null, write, writeLast: write };
}

/** The job's state as operators see it: stored, with what the store could not record laid over it. */
async function stateOf(env: TickEnv, rt: JobRuntime): Promise<JobState> {
  const stored =
    (await env.store.load(rt.def.id)) ?? (await env.store.init(rt.def.id, { sourceKey: rt.def.sourceKey }));
  return withUnrecorded(env.unrecorded, stored);
}

/** The tick of a manual run: no lease, and the schedule stays as it is. */
async function manualTick(env: TickEnv, rt: JobRuntime): Promise<RunResult> {
  const tick = new AbortController();
  rt.tick = tick;
  try {
    const startedAt = env.clock.now();
    const run: TickRun = {
      def: rt.def,
      mode: 'manual',
      state: await stateOf(env, rt),
      signal: tick.signal,
      writer: unfencedWriter(env, rt),
      log: tickLogger(env.logger, rt.def),
      startedAt,
    };
    return await settleTick(env, run, await runTick(env, run));
  } finally {
    rt.tick = null;
  }
}

/** Forgets what the job has seen and its errors: the next tick records a new baseline. */
async function resetState(env: TickEnv, rt: JobRuntime): Promise<void> {
  const closed = breakerClosed();
  await unfencedWriter(env, rt).write({
    clearSeen: true,
    state: { cursor: null, baselined: false, maxItems: 0, ...closed, lastError: null },
  });
  env.unrecorded?.delete(rt.def.id);
  env.metrics.consecutiveErrors(rt.def.id, closed.consecutiveErrors);
  env.metrics.breakerState(rt.def.id, closed.breakerState);
}

export function createOperatorApi(deps: OperatorDeps): OperatorApi {
  const { env, jobs, scheduler } = deps;
  const { store, metrics, logger } = env;

  const get = (id: string): JobRuntime => {
    const rt = jobs.get(id);
    if (!rt) throw unknownJob(id);
    return rt;
  };
  const summary = async (rt: JobRuntime) =>
    summaryOf(rt, await stateOf(env, rt), deps.rejected.staleReason(rt.def.id));
  const write = (rt: JobRuntime, patch: JobStatePatch) => unfencedWriter(env, rt).write({ state: patch });

  return {
    async list() {
      const ids = [...jobs.keys()].sort();
      // One read for a long list (10,000 jobs: one query, not 10,000).
      const stored = await statesOf(store, ids);
      const out = [];
      for (const id of ids) {
        const rt = jobs.get(id)!;
        const st = stored.get(id);
        out.push(
          st
            ? summaryOf(rt, withUnrecorded(env.unrecorded, st), deps.rejected.staleReason(id))
            : await summary(rt),
        );
      }
      return out;
    },

    async show(id) {
      const rt = get(id);
      const st = await stateOf(env, rt);
      const view = summaryOf(rt, st, deps.rejected.staleReason(id));
      const lease = await store.getLease(id);
      return detailOf(view, rt, st, { seenIds: await store.seenCount(id), lease, redact: env.redact });
    },

    async run(id) {
      const rt = get(id);
      if (deps.stopped()) throw new PollerError('POLLER_STOPPED', 'the poller service is stopped');
      return withLock(rt, async () => {
        const result = await manualTick(env, rt);
        logger.info('poller manual run', {
          job_id: id,
          status: result.status,
          items_dispatched: result.items_dispatched,
        });
        await scheduler.arm(rt);
        return result;
      });
    },

    async pause(id) {
      const rt = get(id);
      await write(rt, { paused: true });
      metrics.paused(id, true);
      rt.tick?.abort(new Error('paused'));
      scheduler.disarm(rt);
      logger.info('poller job paused', { job_id: id });
      return summary(rt);
    },

    async resume(id) {
      const rt = get(id);
      const st = await stateOf(env, rt);
      const next = runAtResume(rt.def.schedule, st, env.clock.now(), jitterOf(env));
      await write(rt, { paused: false, ...next });
      metrics.paused(id, false);
      logger.info('poller job resumed', { job_id: id });
      await scheduler.arm(rt);
      return summary(rt);
    },

    async reset(id) {
      const rt = get(id);
      rt.tick?.abort(new Error('reset'));
      await withLock(rt, () => resetState(env, rt));
      logger.info('poller job reset: the next tick records a new baseline', { job_id: id });
      await scheduler.arm(rt);
      return summary(rt);
    },
  };
}
