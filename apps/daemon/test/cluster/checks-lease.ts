// J3 (fencing), J4 (takeover) and J5 (slot coverage) over a history.
import { failoverMs, type CheckParams, type Violation } from './checks-delivery.js';
import { daemonOf, grantEnd, type History, type LeaseGrant } from './history.js';
import type { AppliedFault } from './nemesis-run.js';

const slack = (p: CheckParams): number => p.slackMs ?? 3000;
const iso = (t: number): string => new Date(t).toISOString();

function byJob<T extends { jobId: string }>(rows: readonly T[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const r of rows) m.set(r.jobId, [...(m.get(r.jobId) ?? []), r]);
  return m;
}

/** The victim's message when its tick was fenced off or aborted for want of a lease. */
const LOST_LEASE_MSG = /poller tick lost its lease|poller tick aborted/;

/**
 * J3: per job, audited deliveries never go back to an older epoch (by seq), and none was accepted while its
 * epoch did not hold the lease. With grants: every audited delivery was made under an epoch granted to the
 * same daemon, before that epoch ended (released, broken, revoked). With logs:
 * every pause or partition-db whose victim had a tick in flight shows the victim's tick losing its lease.
 */
export function checkFencing(h: History): Violation[] {
  const out: Violation[] = [];
  for (const [jobId, rows] of byJob(h.audit)) {
    for (let i = 1; i < rows.length; i++) {
      const [a, b] = [rows[i - 1]!, rows[i]!];
      if (b.leaseEpoch < a.leaseEpoch)
        out.push({
          invariant: 'J3',
          message: `${jobId}: seq ${b.seq} written with epoch ${b.leaseEpoch} after seq ${a.seq} with epoch ${a.leaseEpoch}`,
        });
    }
  }
  for (const a of h.audit.filter((x) => x.leaseHeld === false))
    out.push({
      invariant: 'J3',
      message: `${a.jobId}: seq ${a.seq} accepted from ${a.holder} under epoch ${a.leaseEpoch}, which did not hold the lease then`,
    });
  if (h.grants.length > 0) {
    const grant = new Map(h.grants.map((g) => [`${g.jobId}|${g.epoch}`, g]));
    for (const a of h.audit) {
      // The database's own time of the write when known; else the daemon's corrected clock.
      const at = a.writtenAt ?? a.deliveredAt;
      const g = grant.get(`${a.jobId}|${a.leaseEpoch}`);
      if (!g || daemonOf(g.holder) !== daemonOf(a.holder))
        out.push({
          invariant: 'J3',
          message: `${a.jobId}: seq ${a.seq} by ${a.holder} under epoch ${a.leaseEpoch}, never granted to it`,
        });
      else if (grantEnd(g) !== undefined && at > grantEnd(g)!)
        out.push({
          invariant: 'J3',
          message: `${a.jobId}: seq ${a.seq} written at ${iso(at)}, after epoch ${a.leaseEpoch} ended (${g.endedHow ?? 'released'}) at ${iso(grantEnd(g)!)}`,
        });
    }
  }
  if (h.logs.length > 0) out.push(...missingLostLeaseLogs(h));
  return out;
}

function missingLostLeaseLogs(h: History): Violation[] {
  return h.faults
    .filter((f) => (f.kind === 'pause' || f.kind === 'partition-db') && f.daemonId !== undefined)
    .filter((f) => heldBy(h.grants, f).length > 0)
    .filter(
      (f) =>
        !h.logs.some((l) => l.daemonId === f.daemonId && l.at >= f.startedAt && LOST_LEASE_MSG.test(l.msg)),
    )
    .map((f) => ({
      invariant: 'J3' as const,
      message: `${f.kind} of ${f.daemonId} at ${iso(f.startedAt)}: its tick in flight never logged losing its lease`,
    }));
}

/** Grants the fault's victim held when the fault started (granted before, not ended by then). */
function heldBy(grants: readonly LeaseGrant[], f: AppliedFault): LeaseGrant[] {
  return grants.filter(
    (g) =>
      daemonOf(g.holder) === f.daemonId &&
      g.grantedAt <= f.startedAt &&
      (grantEnd(g) === undefined || grantEnd(g)! > f.startedAt),
  );
}

function percentile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

export interface TakeoverStats {
  takeoversMs: number[];
  /** p99 of (grantedAt - dueAt) over grants due outside every fault window. */
  latenessP99Ms: number;
}

/**
 * When each grant's job became claimable: its due time, or the end of the job's previous epoch when that
 * came later (a lease broken after its holder died makes a job due since before the fault claimable only
 * then; that wait is the takeover's, measured apart).
 */
function claimableSince(grants: readonly LeaseGrant[]): Map<LeaseGrant, number> {
  const out = new Map<LeaseGrant, number>();
  for (const rows of byJob([...grants].sort((a, b) => a.grantedAt - b.grantedAt)).values())
    rows.forEach((g, i) =>
      out.set(g, Math.max(g.dueAt, (i > 0 ? grantEnd(rows[i - 1]!) : undefined) ?? -Infinity)),
    );
  return out;
}

/**
 * J4: every job a killed, paused or db-partitioned daemon held when the fault began is granted to another
 * holder within failover + slack. Jobs that became claimable outside fault windows start late by at most
 * jitter + 2 s (p99).
 */
export function checkTakeover(h: History, p: CheckParams): { violations: Violation[]; stats: TakeoverStats } {
  const bound = failoverMs(p) + slack(p);
  const out: Violation[] = [];
  const takeoversMs: number[] = [];
  for (const f of h.faults.filter(
    (x) => x.kind === 'kill' || x.kind === 'pause' || x.kind === 'partition-db',
  )) {
    for (const g of heldBy(h.grants, f)) {
      const next = h.grants.find(
        (n) => n.jobId === g.jobId && n.grantedAt > f.startedAt && n.holder !== g.holder,
      );
      if (
        g.releasedAt !== undefined &&
        g.releasedAt <= f.startedAt + bound &&
        (!next || next.grantedAt > g.releasedAt)
      )
        continue;
      const took = next === undefined ? undefined : next.grantedAt - f.startedAt;
      if (took !== undefined) takeoversMs.push(took);
      if (took === undefined ? h.endedAt - f.startedAt > bound : took > bound)
        out.push({
          invariant: 'J4',
          message: `${g.jobId}: held by ${g.holder} at the ${f.kind} at ${iso(f.startedAt)}, ${took === undefined ? 'never taken over' : `taken over after ${took} ms`} (bound ${bound} ms)`,
        });
    }
  }
  const inFault = (t: number): boolean => h.faults.some((f) => t >= f.startedAt && t <= f.healedAt + bound);
  const claimable = claimableSince(h.grants);
  const lateness = h.grants
    .filter((g) => !inFault(claimable.get(g)!))
    .map((g) => g.grantedAt - claimable.get(g)!);
  const latenessP99Ms = percentile(lateness, 0.99);
  if (latenessP99Ms > p.jitterMs + 2000)
    out.push({
      invariant: 'J4',
      message: `tick lateness p99 ${latenessP99Ms} ms outside faults exceeds jitter + 2 s (${p.jitterMs + 2000} ms)`,
    });
  return { violations: out, stats: { takeoversMs, latenessP99Ms } };
}

/**
 * J5: no job goes longer than interval + jitter + failover + slack between two tick starts (or from its last
 * one to the end of the run). Time inside a db-restart window (from its start to its heal + failover + slack)
 * does not count: a gap may be longer by the part of it the database was restarting, not more.
 */
export function checkSlotCoverage(h: History, p: CheckParams): Violation[] {
  const bound = p.intervalMs + p.jitterMs + failoverMs(p) + slack(p);
  const restarts = h.faults
    .filter((f) => f.kind === 'db-restart')
    .map((f) => [f.startedAt, f.healedAt + failoverMs(p) + slack(p)] as const);
  const excusedMs = (from: number, to: number): number =>
    restarts.reduce((sum, [s, e]) => sum + Math.max(0, Math.min(to, e) - Math.max(from, s)), 0);
  const out: Violation[] = [];
  for (const [jobId, grants] of byJob(h.grants)) {
    const starts = [...grants.map((g) => g.grantedAt), h.endedAt];
    for (let i = 1; i < starts.length; i++) {
      const [from, to] = [starts[i - 1]!, starts[i]!];
      if (to - from - excusedMs(from, to) > bound)
        out.push({
          invariant: 'J5',
          message: `${jobId}: no tick start for ${to - from} ms after ${iso(from)} (bound ${bound} ms${excusedMs(from, to) > 0 ? ` + ${excusedMs(from, to)} ms of db-restart` : ''})`,
        });
    }
  }
  return out;
}
