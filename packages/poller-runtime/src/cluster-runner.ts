/**
 * The runner of cluster mode: the same jobs, ticks and operator commands, but the shared job table decides
 * who ticks what. A claim loop replaces the per-job timers; a reload validates, reconciles the table once
 * per configuration version (the first daemon writes, the others find it done) and swaps the local
 * definitions, with no per-daemon start or stop writes.
 */
import type { Logger } from '@agent/log';
import { safeReason } from '@agent/poller-core';
import type { RuntimeConfigView } from './agent-directory.js';
import type { ReconcileEntry } from './claiming-store.js';
import { skewOf } from './claim-decisions.js';
import { createClaimLoop } from './claim-loop.js';
import { systemClock } from './clock.js';
import { createClusterMetrics } from './cluster-metrics.js';
import { createClusterOperatorApi } from './cluster-operator.js';
import { runClaimedTick } from './cluster-tick.js';
import { createDbCorrectedClock } from './db-clock.js';
import { LeaseLostError } from './errors.js';
import { idle, newJob, waitFor, type JobRuntime } from './job.js';
import { labelsOf } from './job-log.js';
import { startOps } from './job-lifecycle.js';
import { createJobGaugeExporter } from './job-gauges.js';
import type { LeaseDeps } from './lease.js';
import type { ReloadPlan } from './plan.js';
import { pollersOf } from './pollers-section.js';
import { createRejectedJobs } from './rejected.js';
import type { ClusterRunnerOptions, DueHint, Runner, RunnerOptions } from './runner-api.js';
import { createRunnerEnv, type CurrentConfig } from './runner-env.js';
import { logReload, planAgainst, validJobsOf } from './runner-jobs.js';
import { leaseTtlMs } from './schedule.js';
import { emptyJobState } from './store.js';
import type { TickEnv } from './tick-types.js';
import { buildTools } from './tools.js';
import type { JobDefinition } from './validate.js';

/** The table's view of a definition: its hash, TTL and the writes that bring a stored state in line. */
function entryOf(env: TickEnv, def: JobDefinition): ReconcileEntry {
  const now = env.clock.now();
  return {
    id: def.id,
    // Already the SHA-256 of the canonical JSON, as `def_hash` has always been.
    defHash: def.fingerprint,
    leaseTtlMs: leaseTtlMs(def.schedule, env.settings().lease_ttl_factor, now, env.minLeaseTtlMs),
    pausedOnBoot: def.pausedOnBoot,
    ops: (current, applyPausedOnBoot) =>
      startOps(env, def, current ?? { ...emptyJobState(def.id), sourceKey: def.sourceKey }, {
        applyPausedOnBoot,
        now,
      }),
  };
}

/** A replaced or removed job: its tick aborts and can no longer write (the reconcile revoked its lease). */
function retire(rt: JobRuntime, how: 'replaced' | 'removed'): void {
  rt.retired = how;
  rt.tick?.abort(new LeaseLostError(`job ${rt.def.id} was replaced or removed`));
}

/** Tells the other daemons; a failing announcer costs them latency, never this daemon its command. */
function announcerOf(cluster: ClusterRunnerOptions, logger: Logger): (hint: DueHint) => void {
  return (hint) => {
    if (hint.jobIds.length === 0 || !cluster.announceDue) return;
    try {
      cluster.announceDue(hint);
    } catch (err) {
      logger.debug('poller due hint not sent', { reason: safeReason(err) });
    }
  };
}

/** The parts of a cluster runner, built once from its options. */
function clusterParts(options: RunnerOptions, cluster: ClusterRunnerOptions) {
  const config: CurrentConfig = {
    snapshot: options.snapshot,
    settings: pollersOf(options.snapshot)?.settings ?? null,
  };
  const hostClock = options.clock ?? systemClock;
  const dbClock = createDbCorrectedClock(hostClock);
  const { env, shared, closeHttp } = createRunnerEnv({ ...options, clock: dbClock.clock }, config);
  // Per-job state gauges come from the leader's reads of the table, never from this daemon's ticks.
  const jobMetrics = env.metrics;
  env.metrics = { ...jobMetrics, consecutiveErrors() {}, breakerState() {} };
  const jobs = new Map<string, JobRuntime>();
  const state = { stopped: false, started: false };
  const stopped = () => state.stopped;
  const lease: LeaseDeps = {
    store: env.store,
    clock: env.clock,
    metrics: env.metrics,
    logger: env.logger,
    holderId: options.holderId,
    trusted: cluster.trusted,
    stopped,
  };
  const announce = announcerOf(cluster, env.logger);
  const clusterMetrics = createClusterMetrics(options.metrics);
  const tickStarting = clusterMetrics.tickLateness;
  const loop = createClaimLoop({
    store: cluster.store,
    holderId: options.holderId,
    clock: hostClock,
    dbClock,
    metrics: clusterMetrics,
    logger: env.logger,
    random: env.random,
    jobs,
    configVersion: cluster.configVersion,
    trusted: cluster.trusted,
    maxConcurrentTicks: cluster.maxConcurrentTicks ?? 64,
    pollMaxMs: cluster.pollMaxMs ?? 1000,
    runClaim: (rt, claim, asked) => runClaimedTick({ env, lease, stopped, tickStarting }, rt, claim, asked),
    announceDue: announce,
  });
  const gauges = createJobGaugeExporter({
    store: cluster.store,
    metrics: jobMetrics,
    clock: hostClock,
    logger: env.logger,
    intervalMs: cluster.gaugeIntervalMs ?? 10_000,
  });
  return {
    config,
    hostClock,
    dbClock,
    env,
    shared,
    closeHttp,
    jobs,
    state,
    stopped,
    lease,
    loop,
    gauges,
    announce,
  };
}

type ClusterParts = ReturnType<typeof clusterParts>;

/** Only the first daemon on a version writes; the claim query waits for that write. */
async function reconcileTable(
  p: ClusterParts,
  cluster: ClusterRunnerOptions,
  defs: readonly JobDefinition[],
) {
  const { store } = cluster;
  // Run times of new jobs are computed on the database clock: measure it first.
  const sent = p.hostClock.now();
  const dbNow = await store.now();
  p.dbClock.observe(skewOf(dbNow, sent, p.hostClock.now()));
  const version = cluster.configVersion();
  const result = await store.reconcile(
    defs.map((d) => entryOf(p.env, d)),
    version,
  );
  p.env.logger.info(result ? 'poller job table reconciled' : 'poller job table already reconciled', {
    config_version: version,
    ...(result
      ? { add: result.add.length, replace: result.replace.length, remove: result.remove.length }
      : {}),
  });
  // Added and replaced jobs are due at their first run, which the other daemons have not seen yet.
  if (result) p.announce({ jobIds: [...result.add, ...result.replace], dueAt: null });
}

/** Swaps the local definitions after a reconcile: no writes, the table is already in line. */
function swapJobs(p: ClusterParts, plan: ReloadPlan, nextById: ReadonlyMap<string, JobDefinition>): void {
  const { jobs } = p;
  for (const id of [...plan.remove, ...plan.replace]) {
    const rt = jobs.get(id)!;
    const removed = plan.remove.includes(id);
    retire(rt, removed ? 'removed' : 'replaced');
    if (removed) p.env.metrics.removeJob(labelsOf(rt.def));
    jobs.delete(id);
  }
  for (const id of [...plan.add, ...plan.replace]) jobs.set(id, newJob(nextById.get(id)!));
}

export function createClusterRunner(options: RunnerOptions, cluster: ClusterRunnerOptions): Runner {
  const { registry } = options;
  const p = clusterParts(options, cluster);
  const { config, env, shared, jobs, state, loop, gauges } = p;
  const { logger } = env;
  const rejected = createRejectedJobs({
    logger,
    metrics: env.metrics,
    redact: env.redact,
    running: (id) => jobs.has(id),
  });
  const api = createClusterOperatorApi({
    env,
    store: cluster.store,
    lease: p.lease,
    jobs,
    rejected,
    stopped: p.stopped,
    madeDue: (jobId, dueAt) => {
      loop.wake(dueAt);
      p.announce({ jobIds: [jobId], dueAt });
    },
  });

  const planFor = (next: RuntimeConfigView, kinds = registry) => planAgainst(jobs.values(), next, kinds);

  const reload = async (next: RuntimeConfigView): Promise<ReloadPlan> => {
    const { result, plan } = planFor(next);
    config.snapshot = next;
    await shared.dropChanged();
    config.settings = pollersOf(next)?.settings ?? config.settings;
    const nextById = new Map(result.valid.map((d) => [d.id, d]));
    const changed = [...plan.add, ...plan.replace].map((id) => nextById.get(id)!);
    await reconcileTable(p, cluster, [...plan.keep.map((id) => jobs.get(id)!.def), ...changed]);
    swapJobs(p, plan, nextById);
    await shared.dropUnused();
    rejected.note(result.rejected);
    logReload(logger, plan);
    loop.wake();
    return plan;
  };

  return {
    ...api,
    reload,
    // The same validation and plan as a reload; the table and the jobs stay as they are.
    previewReload: (next, kinds) => planFor(next, kinds).plan,
    async start() {
      if (state.started) return;
      state.started = true;
      state.stopped = false;
      const result = validJobsOf(config.snapshot, registry);
      for (const def of result.valid) jobs.set(def.id, newJob(def));
      await reconcileTable(p, cluster, result.valid);
      rejected.note(result.rejected);
      loop.start();
      logger.info('poller service started (cluster)', {
        jobs: result.valid.length,
        rejected: result.rejected.length,
      });
    },
    async stop() {
      state.stopped = true;
      gauges.stop();
      await loop.stop();
      // Ticks end; their sessions release the leases (a graceful stop hands the jobs over at once).
      const handedBack = [...jobs.values()].filter((rt) => rt.tick).map((rt) => rt.def.id);
      for (const rt of jobs.values()) rt.tick?.abort(new Error('shutdown'));
      await waitFor(jobs.values());
      p.announce({ jobIds: handedBack, dueAt: null });
      await shared.dropAll();
      await p.closeHttp();
      state.started = false;
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
    wake: loop.wake,
    exportJobGauges: (on) => gauges.set(on),
  };
}
