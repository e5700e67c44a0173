/**
 * The lease around a scheduled tick: acquire it, renew it while the tick runs, trust it only within its
 * window, write under its fence (the last write releases it) and release it if that write did not.
 */
import type { Logger } from '@agent/log';
import { monotonicNow, type Clock } from './clock.js';
import { LeaseLostError } from './errors.js';
import type { PollerMetrics } from './metrics.js';
import { leaseTrustMarginMs } from './schedule.js';
import type { CommitOps, Fence, JobState, LeaseGrant, StateStore } from './store.js';
import type { TickWriter } from './tick-types.js';

export interface LeaseDeps {
  store: StateStore;
  clock: Clock;
  metrics: PollerMetrics;
  logger: Logger;
  holderId: string;
  /** Cluster mode: false while this daemon could not heartbeat (it may be presumed dead): no sends. */
  trusted?(): boolean;
  /** True once the runner stops: a failed release is no longer retried. */
  stopped?(): boolean;
}

/** A granted lease: the writer of a scheduled tick. */
export interface LeaseSession extends TickWriter {
  readonly fence: Fence;
  /** The job's state read with the grant, when the store read it there (see `LeaseGrant.state`). */
  readonly state?: JobState | null;
  confirmLease(): Promise<void>;
  /** Renews the lease every third of its TTL until `end`; a lost lease aborts `tick`. */
  keepRenewing(tick: AbortController): void;
  /** Stops renewing and releases the lease, unless the last write already did. */
  end(): Promise<void>;
}

/** `busyUntil`: another holder has the lease until then (`null`: unknown). */
export type LeaseAttempt = { session: LeaseSession } | { busyUntil: number | null };

export async function acquireLease(
  deps: LeaseDeps,
  jobId: string,
  ttl: number,
  guard: (ops: CommitOps) => void,
): Promise<LeaseAttempt> {
  const { store, clock } = deps;
  // The trust window counts from the request, on the monotonic clock: neither a slow answer nor a
  // wall-clock step extends it.
  const asked = monotonicNow(clock);
  const grant = await store.acquireLease(jobId, deps.holderId, ttl);
  if (!grant) return { busyUntil: (await store.getLease(jobId))?.expiresAt ?? null };
  return { session: leaseSession(deps, jobId, grant, { ttl, asked, guard }) };
}

/** The session of a granted lease; `asked`: when it was requested (monotonic clock). */
export function leaseSession(
  deps: LeaseDeps,
  jobId: string,
  grant: LeaseGrant,
  how: { ttl: number; asked: number; guard: (ops: CommitOps) => void },
): LeaseSession {
  const { store, clock } = deps;
  const { ttl, asked, guard } = how;
  const margin = leaseTrustMarginMs(ttl);
  if (grant.takeover) {
    deps.metrics.leaseTakeover(jobId);
    deps.logger.warn('poller lease taken over after its holder expired', {
      job_id: jobId,
      previous_holder: grant.previousHolder,
      epoch: grant.epoch,
    });
  }
  const fence: Fence = { holder: grant.holder, epoch: grant.epoch };
  let trustedUntil = asked + ttl - margin;
  let released = false;
  // Set by `end`: a renewal answered after it (or after the releasing write) neither aborts the tick nor
  // renews again.
  let ended = false;
  let renewTimer: unknown = null;

  const commit = async (ops: CommitOps) => {
    guard(ops);
    await store.commit(jobId, ops, fence);
  };
  const session: LeaseSession = {
    fence,
    ...(grant.state !== undefined ? { state: grant.state } : {}),
    write: commit,
    async writeLast(ops) {
      await commit({ ...ops, releaseLease: true });
      released = true;
    },
    async confirmLease() {
      const late = monotonicNow(clock) - trustedUntil;
      if (deps.trusted && !deps.trusted())
        throw new LeaseLostError('this daemon could not heartbeat: it sends nothing until it can again');
      if (late >= 0)
        throw new LeaseLostError(
          `the lease's trust window (TTL ${ttl} ms less ${Math.round(margin)} ms) ran out ${Math.round(late)} ms ago without a renewal`,
        );
      // One indexed read: another holder may have taken over early (a wall clock stepped forward).
      if (store.holdsLease && !(await store.holdsLease(jobId, fence))) throw new LeaseLostError();
    },
    keepRenewing(tick) {
      renewTimer = clock.setTimer(
        async () => {
          if (tick.signal.aborted) return;
          const renewAsked = monotonicNow(clock);
          // null: the store failed. The next period tries again; the trust window runs out meanwhile.
          const held = await store.renewLease(jobId, fence, ttl).catch(() => null);
          // Moved even after `end`: a release that failed is retried until the lease would run out.
          if (held) trustedUntil = Math.max(trustedUntil, renewAsked + ttl - margin);
          if (ended || released) return;
          if (held === false) tick.abort(new LeaseLostError());
          else session.keepRenewing(tick);
        },
        Math.max(50, Math.floor(ttl / 3)),
      );
    },
    async end() {
      ended = true;
      if (renewTimer !== null) clock.clearTimer(renewTimer);
      if (released) return;
      await store.releaseLease(jobId, fence).catch(() => {
        deps.logger.warn('poller lease not released: the store failed; retrying until it answers', {
          job_id: jobId,
          epoch: fence.epoch,
        });
        releaseLater(deps, jobId, fence, trustedUntil + margin);
      });
    },
  };
  return session;
}

/** A failed release is tried again after 1 s, then twice as long each time, at most 30 s apart. */
const RELEASE_RETRY_FIRST_MS = 1000;
const RELEASE_RETRY_MAX_MS = 30_000;

/**
 * Releases a lease whose release failed (the store was away at the end of the tick), in the background,
 * until it goes through, the runner stops, or the lease has run out by itself (`until`, monotonic). Left
 * held, it would stop the job until its TTL: in cluster mode only a due row is claimed, and a held row is
 * due at its expiry. The release is fenced, so a late one never touches a newer holder's lease.
 */
function releaseLater(deps: LeaseDeps, jobId: string, fence: Fence, until: number): void {
  const { store, clock } = deps;
  let wait = RELEASE_RETRY_FIRST_MS;
  const attempt = async (): Promise<void> => {
    if (deps.stopped?.() || monotonicNow(clock) >= until) return;
    await store.releaseLease(jobId, fence).catch(() => {
      wait = Math.min(2 * wait, RELEASE_RETRY_MAX_MS);
      clock.setTimer(attempt, wait);
    });
  };
  clock.setTimer(attempt, wait);
}

/** At start: a lease still held by a dead process is taken over now, not when its TTL runs out. */
export async function takeOverDeadLease(
  deps: LeaseDeps,
  jobId: string,
  holderGone: ((holder: string) => boolean) | undefined,
): Promise<void> {
  const { store } = deps;
  const lease = await store.getLease(jobId);
  if (!lease?.holder || lease.holder === deps.holderId || lease.expiresAt <= deps.clock.now()) return;
  if (!holderGone?.(lease.holder) || !(await store.breakLease(jobId, lease.holder))) return;
  deps.metrics.leaseTakeover(jobId);
  deps.logger.warn('poller lease taken over: its holder process is gone', {
    job_id: jobId,
    previous_holder: lease.holder,
  });
}
