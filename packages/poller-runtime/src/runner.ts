/**
 * The runner: wires the scheduler, the lease, the tick, the operator API, the shared (agent, kind) resources
 * and the agent tools around the jobs of the current snapshot, and applies reloads.
 */
import type { RuntimeConfigView } from './agent-directory.js';
import { pollersOf } from './pollers-section.js';
import { idle, type JobRuntime } from './job.js';
import { applyPlan, startJobs, stopAll, type LifecycleDeps } from './job-lifecycle.js';
import { takeOverDeadLease, type LeaseDeps } from './lease.js';
import { createOperatorApi } from './operator.js';
import type { ReloadPlan } from './plan.js';
import { createRejectedJobs } from './rejected.js';
import type { Runner, RunnerOptions } from './runner-api.js';
import { createRunnerEnv, type CurrentConfig } from './runner-env.js';
import { wake } from './scheduled-tick.js';
import { createScheduler } from './scheduler.js';
import { createTickGate } from './tick-gate.js';
import { buildTools } from './tools.js';
import { logReload, planAgainst, validJobsOf } from './runner-jobs.js';
import { createClusterRunner } from './cluster-runner.js';

export function createRunner(options: RunnerOptions): Runner {
  if (options.cluster) return createClusterRunner(options, options.cluster);
  const { registry } = options;
  const config: CurrentConfig = {
    snapshot: options.snapshot,
    settings: pollersOf(options.snapshot)?.settings ?? null,
  };
  const { env, shared, closeHttp } = createRunnerEnv(options, config);
  const { store, clock, metrics, logger } = env;
  const jobs = new Map<string, JobRuntime>();
  let stopped = false;
  let started = false;
  const isStopped = () => stopped;
  const lease: LeaseDeps = { store, clock, metrics, logger, holderId: options.holderId, stopped: isStopped };
  const gate = createTickGate(
    () => env.settings().max_concurrent_ticks,
    (n) => metrics.ticksWaiting(n),
  );
  const scheduler = createScheduler({
    clock,
    store,
    stopped: isStopped,
    ...(options.roundMs !== undefined ? { roundMs: options.roundMs } : {}),
    onDue: async (rt) => {
      const leave = await gate.enter();
      try {
        await wake({ env, lease, scheduler, stopped: isStopped }, rt);
      } finally {
        leave();
      }
    },
  });
  const lifecycle: LifecycleDeps = { env, jobs, scheduler, stopped: isStopped };
  const rejected = createRejectedJobs({ logger, metrics, redact: env.redact, running: (id) => jobs.has(id) });
  const api = createOperatorApi({ env, jobs, scheduler, rejected, stopped: isStopped });

  // One way to plan, for the reload and for its preview: validate every job of `next`, diff against the running.
  const planFor = (next: RuntimeConfigView, kinds = registry) => planAgainst(jobs.values(), next, kinds);

  const reload = async (next: RuntimeConfigView): Promise<ReloadPlan> => {
    const { result, plan } = planFor(next);
    // Everything is validated; only now are running jobs touched.
    config.snapshot = next;
    await shared.dropChanged();
    config.settings = pollersOf(next)?.settings ?? config.settings;
    await applyPlan(lifecycle, plan, result.valid);
    // The removed jobs' ticks have ended: what only they used can be closed.
    await shared.dropUnused();
    rejected.note(result.rejected);
    logReload(logger, plan);
    return plan;
  };

  return {
    ...api,
    reload,
    previewReload: (next, kinds) => planFor(next, kinds).plan,

    async start() {
      if (started) return;
      started = true;
      stopped = false;
      const result = validJobsOf(config.snapshot, registry);
      for (const def of result.valid) await takeOverDeadLease(lease, def.id, options.holderGone);
      await startJobs(lifecycle, result.valid, true);
      rejected.note(result.rejected);
      logger.info('poller service started', { jobs: result.valid.length, rejected: result.rejected.length });
    },

    async stop() {
      stopped = true;
      await stopAll(lifecycle);
      await shared.dropAll();
      await closeHttp();
      started = false;
    },

    async reloadCredentials(next) {
      config.snapshot = next;
      await shared.dropAll();
      logger.info('poller credentials reloaded: shared clients will be rebuilt');
    },

    tools: () => buildTools({ api, jobs, registry, shared }),
    rejected: () => rejected.all(),
    rejectedJobs: () => rejected.described(),
    idle: () => idle(() => jobs.values()),
    // Cluster mode only.
    wake() {},
    exportJobGauges() {},
  };
}
