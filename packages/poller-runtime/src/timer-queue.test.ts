import { describe, expect, it } from 'vitest';
import { TimerQueue } from './timer-queue.js';

const drain = <T>(q: TimerQueue<T>): T[] => {
  const out: T[] = [];
  for (let e = q.pop(); e !== undefined; e = q.pop()) out.push(e.item);
  return out;
};

describe('TimerQueue', () => {
  it.each([
    { name: 'empty', pushes: [], order: [] },
    { name: 'one', pushes: [[5, 'a']], order: ['a'] },
    {
      name: 'reversed',
      pushes: [
        [3, 'c'],
        [2, 'b'],
        [1, 'a'],
      ],
      order: ['a', 'b', 'c'],
    },
    {
      name: 'equal times keep the order they were added in',
      pushes: [
        [1, 'a'],
        [1, 'b'],
        [0, 'z'],
        [1, 'c'],
      ],
      order: ['z', 'a', 'b', 'c'],
    },
    {
      name: 'negative and huge times',
      pushes: [
        [2 ** 40, 'far'],
        [-5, 'past'],
        [0, 'now'],
      ],
      order: ['past', 'now', 'far'],
    },
  ] as const)('pops earliest first: $name', ({ pushes, order }) => {
    const q = new TimerQueue<string>();
    for (const [at, item] of pushes) q.push(at, item);
    expect(q.size).toBe(pushes.length);
    expect(q.peek()?.item).toBe(order[0]);
    expect(drain(q)).toEqual(order);
    expect(q.pop()).toBeUndefined();
  });

  it('matches a sort over random pushes and pops, and retain keeps the heap order', () => {
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const q = new TimerQueue<number>();
    const model: { at: number; seq: number; item: number }[] = [];
    for (let i = 0; i < 5000; i++) {
      if (rand() < 0.6 || model.length === 0) {
        const at = Math.floor(rand() * 100);
        const e = q.push(at, i);
        model.push({ at, seq: e.seq, item: i });
      } else {
        model.sort((a, b) => a.at - b.at || a.seq - b.seq);
        expect(q.pop()!.item).toBe(model.shift()!.item);
      }
    }
    q.retain((e) => e.item % 3 !== 0);
    const kept = model.filter((e) => e.item % 3 !== 0).sort((a, b) => a.at - b.at || a.seq - b.seq);
    expect(q.size).toBe(kept.length);
    expect(drain(q)).toEqual(kept.map((e) => e.item));
  });
});
