import { describe, expect, it } from 'vitest';
import { createTickGate } from './tick-gate.js';

const flush = () => new Promise((r) => setImmediate(r));

describe('tick gate', () => {
  it('admits at most the limit, then the waiting ones in order as slots come back', async () => {
    const gate = createTickGate(() => 2);
    const order: number[] = [];
    const leaves: (() => void)[] = [];
    for (let i = 0; i < 5; i++)
      void gate.enter().then((leave) => {
        order.push(i);
        leaves.push(leave);
      });
    await flush();
    expect(order).toEqual([0, 1]);
    expect([gate.running(), gate.waiting()]).toEqual([2, 3]);
    leaves[0]!();
    leaves[0]!(); // a second call gives nothing back twice
    await flush();
    expect(order).toEqual([0, 1, 2]);
    expect([gate.running(), gate.waiting()]).toEqual([2, 2]);
    leaves[1]!();
    leaves[2]!();
    await flush();
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it('reads the limit at each decision: a raised limit admits more at the next slot given back', async () => {
    let limit = 1;
    const gate = createTickGate(() => limit);
    const leaves: (() => void)[] = [];
    for (let i = 0; i < 4; i++) void gate.enter().then((leave) => leaves.push(leave));
    await flush();
    expect(leaves).toHaveLength(1);
    limit = 3;
    leaves[0]!();
    await flush();
    expect(gate.running()).toBe(3);
    expect(gate.waiting()).toBe(0);
  });

  it('a limit below 1 still lets one tick run', async () => {
    const gate = createTickGate(() => 0);
    let entered = 0;
    void gate.enter().then(() => entered++);
    await flush();
    expect(entered).toBe(1);
  });

  it('reports the number of waiting ticks when it changes, and nothing while a slot is free', async () => {
    const seen: number[] = [];
    const gate = createTickGate(
      () => 1,
      (n) => seen.push(n),
    );
    const first = await gate.enter();
    expect(seen).toEqual([]);
    const leaves: (() => void)[] = [];
    for (let i = 0; i < 2; i++) void gate.enter().then((leave) => leaves.push(leave));
    await flush();
    expect(seen).toEqual([1, 2]);
    first();
    await flush();
    leaves[0]!();
    await flush();
    expect(seen).toEqual([1, 2, 1, 0]);
  });
});
