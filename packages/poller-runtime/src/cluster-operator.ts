/**
 * The operator's commands in cluster mode, on the shared job table: `list`/`show` read every daemon's view
 * (holder and lease expiry included); `run` takes the job's lease (waiting briefly) so that it never
 * overlaps a tick on another daemon; `pause`, `resume` and `reset` are row writes, and `reset` revokes the
 * lease so that an in-flight tick anywhere can no longer write.
 */
import { breakerClosed } from './breaker.js';
import { monotonicNow, sleep } from './clock.js';
import type { ClaimingStore, ClusterJobRow } from './claiming-store.js';
import { guardOf, withLock, type JobRuntime } from './job.js';
import { tickLogger } from './job-log.js';
import { detailOf, summaryOf } from './job-view.js';
import { leaseSession, type LeaseDeps } from './lease.js';
import { runAtResume } from './next-run.js';
import { unknownJob } from './operator.js';
import type { RejectedJobs } from './rejected.js';
import type { JobSummary, OperatorApi, RunResult } from './runner-api.js';
import { jitterOf, settleTick } from './settle.js';
import { emptyJobState } from './store.js';
import { runTick } from './tick.js';
import type { TickEnv } from './tick-types.js';
import { PollerError } from '@agent/poller-core';

export interface ClusterOperatorDeps {
  env: TickEnv;
  store: ClaimingStore;
  lease: LeaseDeps;
  jobs: ReadonlyMap<string, JobRuntime>;
  rejected: RejectedJobs;
  stopped(): boolean;
  /**
   * A job became due at `dueAt` (database clock) through a command here (resume, reset, the end of a manual
   * run): this daemon's claim loop looks by then, and the other daemons are told.
   */
  madeDue(jobId: string, dueAt: number): void;
}

/** How long `run` waits for a lease another daemon holds, and how often it asks. */
const RUN_WAIT_MS = 2000;
const RUN_ASK_EVERY_MS = 200;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A job the table does not hold (yet): as operators see a fresh job. */
const emptyRow = (id: string): ClusterJobRow => ({
  state: emptyJobState(id),
  holder: null,
  leaseEpoch: 0,
  leaseExpiresAt: null,
  configVersion: 0,
});

/** Claims the job's lease, waiting up to RUN_WAIT_MS while another daemon ticks it. */
async function claimForRun(deps: ClusterOperatorDeps, id: string) {
  const { clock } = deps.env;
  for (let waited = 0; ; waited += RUN_ASK_EVERY_MS) {
    // The trust window counts from the request that got the grant.
    const asked = monotonicNow(clock);
    const claim = await deps.store.claimById(id, deps.lease.holderId);
    if (claim) return { claim, asked };
    if (waited >= RUN_WAIT_MS) return null;
    await sleep(clock, RUN_ASK_EVERY_MS);
  }
}

/** A manual tick under the job's lease: it never overlaps a tick on any daemon, and leaves the schedule. */
async function manualRun(deps: ClusterOperatorDeps, rt: JobRuntime): Promise<RunResult> {
  const { env } = deps;
  const got = await claimForRun(deps, rt.def.id);
  if (!got) {
    const row = (await deps.store.clusterJob(rt.def.id)) ?? emptyRow(rt.def.id);
    return {
      status: 'skipped',
      items_seen: 0,
      items_dispatched: 0,
      error: `busy: ${row.holder ?? 'another daemon'} is ticking this job; try again later`,
    };
  }
  const { claim, asked } = got;
  const session = leaseSession(deps.lease, rt.def.id, claim.grant, {
    ttl: claim.leaseTtlMs,
    asked,
    guard: guardOf(rt),
  });
  const tick = new AbortController();
  rt.tick = tick;
  try {
    const run = {
      def: rt.def,
      mode: 'manual' as const,
      state: claim.state,
      signal: tick.signal,
      abort: (reason: unknown) => tick.abort(reason),
      writer: session,
      log: tickLogger(env.logger, rt.def),
      startedAt: env.clock.now(),
    };
    session.keepRenewing(tick);
    return await settleTick(env, run, await runTick(env, run));
  } finally {
    rt.tick = null;
    await session.end();
    // The lease is back: the job is due at its run time again, which a manual run leaves as it was.
    const { paused, nextRunAt } = claim.state;
    if (!paused && nextRunAt !== null) deps.madeDue(rt.def.id, nextRunAt);
  }
}

export function createClusterOperatorApi(deps: ClusterOperatorDeps): OperatorApi {
  const { env, store, jobs } = deps;
  const get = (id: string): JobRuntime => {
    const rt = jobs.get(id);
    if (!rt) throw unknownJob(id);
    return rt;
  };
  const rowOf = async (id: string): Promise<ClusterJobRow> => (await store.clusterJob(id)) ?? emptyRow(id);
  const summarize = (rt: JobRuntime, row: ClusterJobRow): JobSummary => ({
    ...summaryOf(rt, row.state, deps.rejected.staleReason(rt.def.id)),
    holder: row.holder,
    lease_expires_at: iso(row.leaseExpiresAt),
  });
  const write = async (rt: JobRuntime, ops: Parameters<ClaimingStore['commit']>[1]) => {
    guardOf(rt)();
    await store.commit(rt.def.id, ops, null);
  };

  return {
    async list() {
      const rows = new Map((await store.clusterJobs()).map((r) => [r.state.jobId, r]));
      return [...jobs.keys()].sort().map((id) => summarize(jobs.get(id)!, rows.get(id) ?? emptyRow(id)));
    },
    async show(id) {
      const rt = get(id);
      const row = await rowOf(id);
      const lease = row.leaseEpoch
        ? { holder: row.holder, epoch: row.leaseEpoch, expiresAt: row.leaseExpiresAt ?? 0 }
        : null;
      return detailOf(summarize(rt, row), rt, row.state, {
        seenIds: await store.seenCount(id),
        lease,
        redact: env.redact,
      });
    },
    async run(id) {
      const rt = get(id);
      if (deps.stopped()) throw new PollerError('POLLER_STOPPED', 'the poller service is stopped');
      return withLock(rt, async () => {
        const result = await manualRun(deps, rt);
        env.logger.info('poller manual run', {
          job_id: id,
          status: result.status,
          items_dispatched: result.items_dispatched,
        });
        return result;
      });
    },
    async pause(id) {
      const rt = get(id);
      await write(rt, { state: { paused: true } });
      env.metrics.paused(id, true);
      rt.tick?.abort(new Error('paused'));
      env.logger.info('poller job paused', { job_id: id });
      return summarize(rt, await rowOf(id));
    },
    async resume(id) {
      const rt = get(id);
      const row = await rowOf(id);
      const next = runAtResume(rt.def.schedule, row.state, env.clock.now(), jitterOf(env));
      await write(rt, { state: { paused: false, ...next } });
      env.metrics.paused(id, false);
      env.logger.info('poller job resumed', { job_id: id });
      if (typeof next.nextRunAt === 'number') deps.madeDue(id, next.nextRunAt);
      return summarize(rt, await rowOf(id));
    },
    async reset(id) {
      const rt = get(id);
      rt.tick?.abort(new Error('reset'));
      // One transaction: the state is cleared and the lease revoked, so no in-flight tick can write it back.
      await write(rt, {
        clearSeen: true,
        state: { cursor: null, baselined: false, maxItems: 0, ...breakerClosed(), lastError: null },
        revokeLease: true,
      });
      env.unrecorded?.delete(id);
      env.logger.info('poller job reset: the next tick records a new baseline', { job_id: id });
      const row = await rowOf(id);
      // The revoked lease no longer stands for the job's due time: its run time does.
      if (!row.state.paused && row.state.nextRunAt !== null) deps.madeDue(id, row.state.nextRunAt);
      return summarize(rt, row);
    },
  };
}
