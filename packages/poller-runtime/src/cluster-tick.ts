/**
 * The tick of a job claimed from the shared table: the claim's grant becomes the tick's lease session,
 * then the usual path runs (breaker, fetch, per-item delivery commits, the last write releasing the lease).
 * The database already judged the job due; a job claimed only because a lease expired (a manual run's
 * holder died) is checked against its run time and handed back when it is not due.
 */
import { safeReason } from '@agent/poller-core';
import type { JobClaim } from './claiming-store.js';
import { isStateStoreError } from './errors.js';
import { guardOf, withLock, type JobRuntime } from './job.js';
import { leaseSession, type LeaseDeps } from './lease.js';
import { underLease } from './scheduled-tick.js';
import { settleStoreFailure } from './store-failed-tick.js';
import type { TickEnv } from './tick-types.js';

export interface ClusterTickDeps {
  env: TickEnv;
  lease: LeaseDeps;
  stopped(): boolean;
  /** How late a claimed tick starts after its slot (ms, database clock). */
  tickStarting(lateMs: number): void;
}

export function runClaimedTick(
  deps: ClusterTickDeps,
  rt: JobRuntime,
  claim: JobClaim,
  asked: number,
): Promise<number | null> {
  const { env } = deps;
  return withLock(rt, async () => {
    const guard = guardOf(rt);
    const session = leaseSession(deps.lease, rt.def.id, claim.grant, { ttl: claim.leaseTtlMs, asked, guard });
    try {
      if (deps.stopped() || rt.retired) return null;
      const next = await underLease(deps, rt, session, claim.dbNow);
      return 'at' in next ? next.at : null;
    } catch (err) {
      if (!isStateStoreError(err) || deps.stopped() || rt.retired) {
        env.logger.error('poller scheduler error', { job_id: rt.def.id, reason: safeReason(err) });
        return null;
      }
      await settleStoreFailure(env, rt.def, err, guard).catch(() => {});
      return null;
    } finally {
      rt.tick = null;
      await session.end();
    }
  });
}
