// The long fault run's command line (the run itself is cluster-nemesis.e2e.test.ts's, made longer).
import { describe, expect, it } from 'vitest';
import { parseJepsenArgs, runJepsen } from './jepsen.js';

describe('pnpm jepsen arguments', () => {
  it.each<[string[], { minutes: number; seed: number }]>([
    [[], { minutes: 10, seed: 4242 }],
    [['--minutes', '2', '--seed', '7'], { minutes: 2, seed: 7 }],
    [['--seed=0', '--minutes=0.5'], { minutes: 0.5, seed: 0 }],
  ])('%j', (argv, want) => {
    expect(parseJepsenArgs(argv, () => 4242)).toMatchObject({ ...want, daemons: 3, jobs: 24 });
  });

  it.each<[string[], RegExp]>([
    [['--minutes'], /--minutes needs a number, got nothing/],
    [['--minutes', 'ten'], /--minutes needs a number, got ten/],
    [['--minutes', '0'], /--minutes must be > 0, got 0/],
    [['--seed', '-1'], /--seed must be a non-negative integer, got -1/],
    [['--seed', '1.5'], /--seed must be a non-negative integer, got 1.5/],
    [['--hours', '1'], /unknown argument --hours/],
  ])('refuses %j with the usage', (argv, message) => {
    expect(() => parseJepsenArgs(argv)).toThrow(message);
    expect(() => parseJepsenArgs(argv)).toThrow(/usage: pnpm jepsen \[--minutes N\] \[--seed S\]/);
  });

  it('exits 2 on bad arguments without starting anything', async () => {
    const lines: string[] = [];
    expect(await runJepsen(['--seed', 'x'], (l) => lines.push(l))).toBe(2);
    expect(lines).toEqual([expect.stringMatching(/^jepsen: --seed needs a number, got x\n/)]);
  });
});
