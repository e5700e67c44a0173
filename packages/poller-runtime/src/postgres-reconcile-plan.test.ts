import { describe, expect, it } from 'vitest';
import type { ReconcileEntry } from './claiming-store.js';
import { planReconcile } from './postgres-reconcile-plan.js';
import type { PgRow } from './postgres-schema.js';
import type { CommitOps, JobState, JobStatePatch } from './store.js';

/** A stored row as the reconcile's `SELECT *` returns it (only what the plan reads). */
const row = (id: string, over: PgRow = {}): PgRow => ({
  job_id: id,
  def_hash: `h-${id}`,
  lease_ttl_ms: '30000',
  paused_on_boot: false,
  paused: false,
  consecutive_errors: 0,
  breaker_state: 0,
  breaker_openings: 0,
  max_items: 0,
  cursor: 'c',
  ...over,
});

/** An entry recording what its `ops` were called with. */
function entry(id: string, over: Partial<ReconcileEntry> = {}, ops: CommitOps = {}) {
  const calls: { current: JobState | null; applyPausedOnBoot: boolean }[] = [];
  const e: ReconcileEntry = {
    id,
    defHash: `h-${id}`,
    leaseTtlMs: 30_000,
    pausedOnBoot: false,
    ops: (current, applyPausedOnBoot) => {
      calls.push({ current, applyPausedOnBoot });
      return { ...ops, state: { nextRunAt: 1 } as JobStatePatch };
    },
    ...over,
  };
  return { e, calls };
}

const rows = (...rs: PgRow[]) => new Map(rs.map((r) => [String(r.job_id), r]));

describe('planReconcile', () => {
  it.each([
    {
      name: 'no row: added, paused_on_boot applies',
      stored: [],
      over: { pausedOnBoot: true },
      change: 'add',
      applyPausedOnBoot: true,
      current: null,
    },
    {
      name: 'a row no reconcile wrote: added, its stored state handed over',
      stored: [row('j', { def_hash: null })],
      over: {},
      change: 'add',
      applyPausedOnBoot: true,
      current: { jobId: 'j', cursor: 'c' },
    },
    {
      name: 'same hash: kept, ops not asked',
      stored: [row('j')],
      over: {},
      change: 'keep',
      applyPausedOnBoot: null,
      current: null,
    },
    {
      name: 'new hash: replaced, paused_on_boot not re-applied while it stays on',
      stored: [row('j', { paused_on_boot: true })],
      over: { defHash: 'h2', pausedOnBoot: true },
      change: 'replace',
      applyPausedOnBoot: false,
      current: { jobId: 'j' },
    },
    {
      name: 'new hash with paused_on_boot turned on: replaced, it applies',
      stored: [row('j')],
      over: { defHash: 'h2', pausedOnBoot: true },
      change: 'replace',
      applyPausedOnBoot: true,
      current: { jobId: 'j' },
    },
  ])('$name', ({ stored, over, change, applyPausedOnBoot, current }) => {
    const { e, calls } = entry('j', over);
    const plan = planReconcile([e], rows(...stored));
    expect(plan.result).toEqual({ add: [], replace: [], remove: [], keep: [], [change]: ['j'] });
    if (applyPausedOnBoot === null) {
      expect(calls).toEqual([]);
      expect(plan.defined).toEqual([]);
      expect(plan.patches).toEqual([]);
      return;
    }
    expect(calls).toHaveLength(1);
    expect(calls[0]!.applyPausedOnBoot).toBe(applyPausedOnBoot);
    if (current === null) expect(calls[0]!.current).toBeNull();
    else expect(calls[0]!.current).toMatchObject(current);
    expect(plan.defined).toEqual([
      { id: 'j', defHash: e.defHash, leaseTtlMs: 30_000, pausedOnBoot: e.pausedOnBoot },
    ]);
    expect(plan.patches).toEqual([{ jobId: 'j', patch: { nextRunAt: 1 } }]);
    // Only a replaced job had a lease of an old definition to revoke.
    expect(plan.revoke).toEqual(change === 'replace' ? ['j'] : []);
  });

  it('a kept job whose TTL changed gets only its TTL written', () => {
    const plan = planReconcile([entry('j', { leaseTtlMs: 90_000 }).e], rows(row('j')));
    expect(plan.ttl).toEqual([{ id: 'j', leaseTtlMs: 90_000 }]);
    expect(plan.result.keep).toEqual(['j']);
    expect(planReconcile([entry('j').e], rows(row('j'))).ttl).toEqual([]);
  });

  it('gathers seen-set writes: clears in one list, anything more per job', () => {
    const plan = planReconcile(
      [
        entry('a', { defHash: 'new' }, { clearSeen: true }).e,
        entry('b', {}, { clearSeen: true, addSeen: ['x'], seenLimit: 10 }).e,
        entry('c').e,
      ],
      rows(row('a')),
    );
    expect(plan.clearSeen).toEqual(['a', 'b']);
    expect(plan.seenWrites).toEqual([
      { jobId: 'b', ops: { clearSeen: false, addSeen: ['x'], seenLimit: 10, state: { nextRunAt: 1 } } },
    ]);
  });

  it('removes the rows no entry names, and sorts every list of the result', () => {
    const plan = planReconcile(
      [entry('z').e, entry('b').e, entry('k').e],
      rows(row('k'), row('gone-2'), row('gone-1')),
    );
    expect(plan.result).toEqual({ add: ['b', 'z'], replace: [], remove: ['gone-1', 'gone-2'], keep: ['k'] });
  });
});
