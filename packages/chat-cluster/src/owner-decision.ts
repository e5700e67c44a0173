/**
 * What the owner of one inbound side does next, decided from what it knows now; `owners.ts` carries the
 * steps out. Kept free of effects so that every case is a row in a table test.
 */

/** Where the side is; `starting` and `stopping` are in flight (one at a time per side). */
export type SidePhase = 'stopped' | 'starting' | 'running' | 'stopping';

/** Why a running side is stopped. */
type LossReason =
  /** A renewal found the term no longer ours (or came back too late to count). */
  | 'term lost'
  /** No renewal succeeded within the local trust window: another daemon may take over soon. */
  | 'trust window expired'
  /** The cluster membership stopped trusting this daemon (its heartbeats do not get through). */
  | 'membership untrusted'
  /** `release()`: the runtime let the side go (shutdown, reload). */
  | 'released';

export interface OwnerView {
  /** `release()` was called. */
  released: boolean;
  /** The membership trusts this daemon. */
  trusted: boolean;
  /** This daemon holds the lease and is inside its local trust window. */
  held: boolean;
  /** How `held` last went false. */
  lostBy: 'term lost' | 'trust window expired';
  side: SidePhase;
  /** A start failed and its retry time has not come. */
  backingOff: boolean;
}

export type SideStep = { kind: 'start' } | { kind: 'stop'; reason: LossReason } | { kind: 'none' };

/** `campaign`: renew the lease, or try to take it; `give-up`: end the term now for the next candidate. */
export type LeaseStep = 'campaign' | 'give-up' | 'none';

/** Why the side must not run now, or null when it may. */
function reasonNotToRun(v: OwnerView): LossReason | null {
  if (v.released) return 'released';
  if (!v.trusted) return 'membership untrusted';
  if (!v.held) return v.lostBy;
  return null;
}

export function sideStep(v: OwnerView): SideStep {
  // A start or stop in flight finishes first; the next step is decided after it.
  if (v.side === 'starting' || v.side === 'stopping') return { kind: 'none' };
  const reason = reasonNotToRun(v);
  if (v.side === 'running') return reason === null ? { kind: 'none' } : { kind: 'stop', reason };
  return reason === null && !v.backingOff ? { kind: 'start' } : { kind: 'none' };
}

export function leaseStep(v: OwnerView): LeaseStep {
  if (!v.released && v.trusted && !v.backingOff) return 'campaign';
  // Giving up only once the side stopped: its last state write still carries a live term.
  return v.held && v.side === 'stopped' ? 'give-up' : 'none';
}

/** The longest wait before another start after failures. */
export const MAX_START_RETRY_MS = 60_000;

/** How long to wait after the `failures`-th failed start in a row: doubling from `baseMs`, capped. */
export function startRetryMs(failures: number, baseMs: number): number {
  const ms = baseMs * 2 ** Math.max(0, failures - 1);
  return Math.min(Math.max(baseMs, MAX_START_RETRY_MS), ms);
}
