import { describe, expect, it } from 'vitest';
import { ORPHAN_ROUNDS, planPartitions, type PartitionPlanInput } from './partition-plan.js';

// 'a#1' walks 8 partitions from 4: 4 5 6 7 0 1 2 3.
const base: PartitionPlanInput = {
  partitions: 8,
  live: 1,
  holderId: 'a#1',
  mine: [],
  draining: [],
  others: new Map(),
  freeRounds: new Map(),
  taking: true,
};
const heldBy = (holder: string, ps: number[]) => new Map(ps.map((p) => [p, holder] as const));
const all = [0, 1, 2, 3, 4, 5, 6, 7];

describe('planPartitions', () => {
  const cases: {
    name: string;
    input: Partial<PartitionPlanInput>;
    want: { target: number; take: number[]; drain: number[]; takesOrphans?: boolean };
  }[] = [
    {
      name: 'alone: takes every partition, from its own starting point',
      input: {},
      want: { target: 8, take: [4, 5, 6, 7, 0, 1, 2, 3], drain: [] },
    },
    {
      name: 'no live member reported counts as one (itself)',
      input: { live: 0 },
      want: { target: 8, take: [4, 5, 6, 7, 0, 1, 2, 3], drain: [] },
    },
    {
      name: 'holding all when a second member appears: drains half, the end of its own order',
      input: { live: 2, mine: all },
      want: { target: 4, take: [], drain: [0, 1, 2, 3] },
    },
    {
      name: 'the newcomer: nothing free, nothing to give up; waits for the others to hand over',
      input: { live: 2, others: heldBy('b#1', all) },
      want: { target: 4, take: [], drain: [] },
    },
    {
      name: 'the newcomer takes free partitions up to its target',
      input: { live: 2, others: heldBy('b#1', [0, 1, 2]) },
      want: { target: 4, take: [4, 5, 6, 7], drain: [] },
    },
    {
      name: 'paused: takes nothing, even free partitions',
      input: { live: 1, mine: [4, 5], taking: false },
      want: { target: 8, take: [], drain: [] },
    },
    {
      name: 'gives up only what others lack beyond the free partitions',
      input: { live: 2, mine: [4, 5, 6, 7, 0, 1], others: heldBy('b#1', [2]) },
      want: { target: 4, take: [], drain: [0, 1] },
    },
    {
      name: 'partitions already draining are the ones given up',
      input: { live: 2, mine: all, draining: [4] },
      want: { target: 4, take: [], drain: [1, 2, 3, 4] },
    },
    {
      name: 'no longer above the target: stops draining',
      input: { live: 1, mine: all, draining: [0] },
      want: { target: 8, take: [], drain: [] },
    },
    {
      name: 'three members, one holds all: it keeps its target',
      input: { live: 3, holderId: 'b#1', mine: all },
      // 'b#1' walks from 1: 1 2 3 4 5 6 7 0.
      want: { target: 3, take: [], drain: [0, 4, 5, 6, 7] },
    },
    {
      name: 'another holder of this daemon id (a lapsed lease of its own) is nobody lacking',
      input: { live: 1, mine: [4, 5, 6], others: heldBy('a#1', [7, 0, 1, 2, 3]) },
      want: { target: 8, take: [], drain: [] },
    },
    {
      name: 'at its target, leaves a partition free for fewer rounds than the orphan limit',
      input: {
        live: 3,
        mine: [4, 5, 6],
        others: heldBy('b#1', [0, 1, 2]),
        freeRounds: new Map([
          [3, ORPHAN_ROUNDS - 1],
          [7, ORPHAN_ROUNDS - 1],
        ]),
      },
      want: { target: 3, take: [], drain: [] },
    },
    {
      name: 'takes a partition nobody took for the orphan limit, above its target',
      input: {
        live: 3,
        mine: [4, 5, 6],
        others: heldBy('b#1', [0, 1, 2]),
        freeRounds: new Map([
          [3, 1],
          [7, ORPHAN_ROUNDS],
        ]),
      },
      want: { target: 3, take: [7], drain: [], takesOrphans: true },
    },
    {
      name: 'above target after taking orphans: a third member counted but absent would lack 3',
      input: { live: 3, mine: [4, 5, 6, 7], others: heldBy('b#1', [0, 1, 2, 3]) },
      want: { target: 3, take: [], drain: [7] },
    },
    {
      name: '…but not at the live count at which it took orphans (the count overstates the members)',
      input: { live: 3, mine: [4, 5, 6, 7], others: heldBy('b#1', [0, 1, 2, 3]), orphanedAtLive: 3 },
      want: { target: 3, take: [], drain: [] },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planPartitions({ ...base, ...c.input });
      expect(plan).toEqual({ takesOrphans: false, ...c.want });
    });
  }

  it('members joining one by one end up with every partition owned, none above its target', () => {
    const partitions = 32;
    const owner = new Map<number, string>();
    const members: string[] = [];
    const round = (): void => {
      for (const m of members) {
        const mine = Array.from(owner).flatMap(([p, h]) => (h === m ? [p] : []));
        const others = new Map(Array.from(owner).filter(([, h]) => h !== m));
        const plan = planPartitions({
          ...base,
          partitions,
          live: members.length,
          holderId: m,
          mine,
          others,
        });
        for (const p of plan.take) if (!owner.has(p)) owner.set(p, m);
        for (const p of plan.drain) owner.delete(p); // drained at once
      }
    };
    for (const m of ['a#1', 'b#1', 'c#1', 'd#1', 'e#1']) {
      members.push(m);
      for (let i = 0; i < 4; i++) round();
      const target = Math.ceil(partitions / members.length);
      const counts = members.map((x) => Array.from(owner.values()).filter((h) => h === x).length);
      expect(owner.size).toBe(partitions);
      expect(Math.max(...counts)).toBeLessThanOrEqual(target);
      // Stable: another round changes nothing.
      const before = new Map(owner);
      round();
      expect(owner).toEqual(before);
    }
  });
});
