// J8 (clock) over a history: on the database clock no tick starts before it is due, no slot of a job runs
// twice, and a daemon under a skewed host clock measures that skew.
import type { Violation } from './checks-delivery.js';
import type { History, LeaseGrant } from './history.js';

const iso = (t: number): string => new Date(t).toISOString();

/** How far the measured skew may be from the one applied (the measurement is good to half a round trip). */
const SKEW_TOLERANCE_SECS = 2;

function earlyClaims(grants: readonly LeaseGrant[]): Violation[] {
  return grants
    .filter((g) => g.grantedAt < g.dueAt)
    .map((g) => ({
      invariant: 'J8' as const,
      message: `${g.jobId}: epoch ${g.epoch} granted to ${g.holder} at ${iso(g.grantedAt)}, ${g.dueAt - g.grantedAt} ms before due`,
    }));
}

/**
 * A tick plans its next run after the slot it ran, on the database-corrected clock. A next run planned at or
 * before the tick's own start means the host clock was used uncorrected (one behind the database): the job
 * falls due again at once and runs early.
 */
function plannedInThePast(grants: readonly LeaseGrant[]): Violation[] {
  return grants
    .filter((g) => g.ran?.nextRunAt !== undefined && g.ran.nextRunAt <= g.grantedAt)
    .map((g) => ({
      invariant: 'J8' as const,
      message: `${g.jobId}: the tick of epoch ${g.epoch} (${g.holder}) started at ${iso(g.grantedAt)} and planned its next run ${g.grantedAt - g.ran!.nextRunAt!} ms before that`,
    }));
}

/**
 * Of the ticks that ran a slot to success, per job, each ran a later slot than the one before: two
 * successful ticks of one slot (on one daemon or two) mean a slot ran twice. A tick cut off by a fault never
 * succeeded, so its slot may run again elsewhere.
 */
function slotsTwice(grants: readonly LeaseGrant[]): Violation[] {
  const last = new Map<string, LeaseGrant>();
  const out: Violation[] = [];
  for (const g of [...grants].sort((a, b) => a.grantedAt - b.grantedAt || a.epoch - b.epoch)) {
    if (g.ran?.status !== 'ok' || g.slotAt === undefined) continue;
    const prev = last.get(g.jobId);
    if (prev !== undefined && g.slotAt <= prev.slotAt!)
      out.push({
        invariant: 'J8',
        message: `${g.jobId}: slot ${iso(g.slotAt)} ran by epoch ${g.epoch} (${g.holder}) after slot ${iso(prev.slotAt!)} already ran by epoch ${prev.epoch} (${prev.holder})`,
      });
    last.set(g.jobId, g);
  }
  return out;
}

function skewMeasured(h: History): Violation[] {
  return h.skews
    .filter(
      (s) => s.measuredSecs === undefined || Math.abs(s.measuredSecs + s.skewSecs) > SKEW_TOLERANCE_SECS,
    )
    .map((s) => ({
      invariant: 'J8' as const,
      message: `${s.daemonId} under a ${s.skewSecs > 0 ? '+' : ''}${s.skewSecs} s clock measured ${
        s.measuredSecs === undefined ? 'no skew' : `a skew of ${s.measuredSecs} s`
      } (want ${-s.skewSecs} ± ${SKEW_TOLERANCE_SECS} s)`,
    }));
}

/** J8: no early claim, no next run planned in the past, no slot run twice, every applied skew measured. */
export function checkClock(h: History): Violation[] {
  return [
    ...earlyClaims(h.grants),
    ...plannedInThePast(h.grants),
    ...slotsTwice(h.grants),
    ...skewMeasured(h),
  ];
}
