// J1 (no lost item) and J2 (every duplicate attributable to one fault) over a history.
import type { ChatCheckParams } from './checks-chat.js';
import { daemonOf, grantEnd, type History, type LeaseGrant } from './history.js';
import type { AppliedFault } from './nemesis-run.js';

type Invariant =
  'J1' | 'J2' | 'J3' | 'J4' | 'J5' | 'J7' | 'J8' | 'J9' | 'C1' | 'C2' | 'C3' | 'C4' | 'C5' | 'C6' | 'C7';

export interface Violation {
  invariant: Invariant;
  message: string;
}

export interface CheckParams {
  /** The jobs' `every_secs` in ms. */
  intervalMs: number;
  jitterMs: number;
  /** The lease TTL the daemons run with. */
  ttlMs: number;
  /** The heartbeat window after which a silent holder's lease is claimable. */
  heartbeatWindowMs: number;
  /** Allowance on top of each bound; 3 s by default (§5.10). */
  slackMs?: number;
  /** The chat workload's bounds; the chat checks run when both these and the history's chat part are there. */
  chat?: ChatCheckParams;
}

/** How long after a holder goes silent its jobs become claimable: the lease's end or the heartbeat window. */
export const failoverMs = (p: CheckParams): number => Math.min(p.ttlMs, p.heartbeatWindowMs);

const sample = (xs: readonly string[]): string => xs.slice(0, 5).join(', ') + (xs.length > 5 ? ', …' : '');

/** J1: every item published before the quiet period reached the sink; nothing arrived that was never published or that the audit records but the sink never got. */
export function checkLost(h: History): Violation[] {
  const received = new Set(h.sink.map((s) => s.itemId));
  const publishedIds = new Set(h.published.map((p) => p.itemId));
  const out: Violation[] = [];
  const lost = h.published
    .filter((p) => p.publishedAt <= h.quietFrom && !received.has(p.itemId))
    .map((p) => p.itemId);
  if (lost.length > 0) out.push({ invariant: 'J1', message: `${lost.length} items lost: ${sample(lost)}` });
  const phantom = [...received].filter((id) => !publishedIds.has(id));
  if (phantom.length > 0)
    out.push({
      invariant: 'J1',
      message: `${phantom.length} items received but never published: ${sample(phantom)}`,
    });
  const unsent = [...new Set(h.audit.map((a) => a.itemId))].filter((id) => !received.has(id));
  if (unsent.length > 0)
    out.push({
      invariant: 'J1',
      message: `${unsent.length} items audited as delivered but never received: ${sample(unsent)}`,
    });
  return out;
}

/** A job's tick was in flight on the fault's victim (any daemon for a db-restart) when it started. */
function heldAt(grants: readonly LeaseGrant[], jobId: string, f: AppliedFault): boolean {
  return grants.some(
    (g) =>
      g.jobId === jobId &&
      g.grantedAt <= f.startedAt &&
      (grantEnd(g) === undefined || grantEnd(g)! > f.startedAt) &&
      (f.daemonId === undefined || daemonOf(g.holder) === f.daemonId),
  );
}

export interface DuplicateStats {
  duplicates: number;
  attributed: number;
}

/**
 * J2: each extra delivery of an item is charged to one fault: the fault started before it, healed at most
 * failover + interval + slack before it, the item was published before the heal, and (when grants are known)
 * the item's job had a tick in flight on the victim. A fault absorbs at most one duplicate per job (per-item
 * commit: one item in flight per interrupted tick). Extras are charged in time order to the eligible fault
 * whose window closes first, which charges as many as any assignment can.
 */
export function checkDuplicates(
  h: History,
  p: CheckParams,
): { violations: Violation[]; stats: DuplicateStats } {
  const window = failoverMs(p) + p.intervalMs + (p.slackMs ?? 3000);
  const publishedAt = new Map(h.published.map((i) => [i.itemId, i]));
  const times = new Map<string, number[]>();
  for (const s of h.sink) times.set(s.itemId, [...(times.get(s.itemId) ?? []), s.at]);
  const extras = [...times].flatMap(([itemId, ts]) => ts.slice(1).map((at) => ({ itemId, at })));
  extras.sort((a, b) => a.at - b.at);
  const used = new Set<string>();
  const unattributed: string[] = [];
  for (const x of extras) {
    const item = publishedAt.get(x.itemId);
    const jobId = item?.jobId ?? '';
    const eligible = h.faults.filter(
      (f) =>
        f.startedAt <= x.at &&
        x.at <= f.healedAt + window &&
        item !== undefined &&
        item.publishedAt <= f.healedAt &&
        !used.has(`${h.faults.indexOf(f)}|${jobId}`) &&
        (h.grants.length === 0 || heldAt(h.grants, jobId, f)),
    );
    const fault = eligible.sort((a, b) => a.healedAt - b.healedAt)[0];
    if (fault === undefined) unattributed.push(`${x.itemId} at ${new Date(x.at).toISOString()}`);
    else used.add(`${h.faults.indexOf(fault)}|${jobId}`);
  }
  const violations: Violation[] =
    unattributed.length === 0
      ? []
      : [
          {
            invariant: 'J2',
            message: `${unattributed.length} duplicates not attributable to a fault: ${sample(unattributed)}`,
          },
        ];
  return {
    violations,
    stats: { duplicates: extras.length, attributed: extras.length - unattributed.length },
  };
}
