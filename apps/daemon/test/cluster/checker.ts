// The history checker of the cluster fault harness: the invariants J1-J5 and J7-J9 of the design, as pure
// functions of a merged history (history.ts). A run passes when `violations` is empty.
import { checkClock } from './checks-clock.js';
import { checkHygiene, checkReloads } from './checks-control.js';
import { checkDuplicates, checkLost, type CheckParams, type Violation } from './checks-delivery.js';
import { checkFencing, checkSlotCoverage, checkTakeover } from './checks-lease.js';
import type { History } from './history.js';

export type { CheckParams } from './checks-delivery.js';

interface CheckStats {
  published: number;
  received: number;
  duplicates: number;
  attributedDuplicates: number;
  audited: number;
  grants: number;
  faults: number;
  takeovers: number;
  maxTakeoverMs: number;
  latenessP99Ms: number;
}

export interface CheckResult {
  ok: boolean;
  violations: Violation[];
  stats: CheckStats;
}

export function checkHistory(h: History, p: CheckParams): CheckResult {
  const duplicates = checkDuplicates(h, p);
  const takeover = checkTakeover(h, p);
  const violations = [
    ...checkLost(h),
    ...duplicates.violations,
    ...checkFencing(h),
    ...takeover.violations,
    ...checkSlotCoverage(h, p),
    ...checkReloads(h),
    ...checkClock(h),
    ...checkHygiene(h),
  ];
  return {
    ok: violations.length === 0,
    violations,
    stats: {
      published: h.published.length,
      received: new Set(h.sink.map((s) => s.itemId)).size,
      duplicates: duplicates.stats.duplicates,
      attributedDuplicates: duplicates.stats.attributed,
      audited: h.audit.length,
      grants: h.grants.length,
      faults: h.faults.length,
      takeovers: takeover.stats.takeoversMs.length,
      maxTakeoverMs: Math.max(0, ...takeover.stats.takeoversMs),
      latenessP99Ms: takeover.stats.latenessP99Ms,
    },
  };
}

/** The verdict as text: the figures, then one line per violation. */
export function formatReport(r: CheckResult): string {
  const s = r.stats;
  const lines = [
    `history: ${s.published} published, ${s.received} received, ${s.duplicates} duplicates (${s.attributedDuplicates} attributed), ` +
      `${s.audited} audited deliveries, ${s.grants} lease grants, ${s.faults} faults`,
    `takeovers: ${s.takeovers} (max ${s.maxTakeoverMs} ms); tick lateness p99 outside faults: ${s.latenessP99Ms} ms`,
    r.ok ? 'verdict: PASS' : `verdict: FAIL (${r.violations.length} violations)`,
    ...r.violations.map((v) => `  ${v.invariant} ${v.message}`),
  ];
  return lines.join('\n');
}
