// The reload history: the versions the daemon ran, newest first, with their triggers, bounded.
import { describe, expect, it } from 'vitest';
import { createReloadHistory } from './reload-history.js';

/** A clock that moves one minute per reading, from 2026-03-01 08:00:00Z. */
function clock(): () => Date {
  let t = Date.parse('2026-03-01T08:00:00.000Z');
  return () => new Date((t += 60_000) - 60_000);
}

const entry = (version: number, triggers: string[] = ['cli']) => ({
  version,
  triggers,
  applied: 1,
  rejected: 0,
});

describe('reload history', () => {
  const cases: [string, number, number[], number[]][] = [
    ['empty', 50, [], []],
    ['newest first', 50, [1, 2, 3], [3, 2, 1]],
    ['the last `max` only', 3, [1, 2, 3, 4, 5], [5, 4, 3]],
    ['a max of one', 1, [1, 2], [2]],
  ];
  it.each(cases)('%s', (_name, max, recorded, listed) => {
    const history = createReloadHistory(clock(), max);
    for (const v of recorded) history.record(entry(v));
    expect(history.list().map((e) => e.version)).toEqual(listed);
  });

  it('stamps each version with the clock and keeps what was recorded', () => {
    const history = createReloadHistory(clock());
    history.record({ version: 1, triggers: ['start'], applied: 2, rejected: 1 });
    history.record({ version: 2, triggers: ['admin', 'watcher'], applied: 2, rejected: 0 });
    expect(history.list()).toEqual([
      { version: 2, at: '2026-03-01T08:01:00.000Z', triggers: ['admin', 'watcher'], applied: 2, rejected: 0 },
      { version: 1, at: '2026-03-01T08:00:00.000Z', triggers: ['start'], applied: 2, rejected: 1 },
    ]);
  });

  it('hands out copies: changing a listed entry changes nothing', () => {
    const history = createReloadHistory(clock());
    history.record(entry(1));
    const listed = history.list();
    listed[0]!.triggers.push('admin');
    expect(history.list()[0]!.triggers).toEqual(['cli']);
  });
});
