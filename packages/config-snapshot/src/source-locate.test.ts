import { sleep, type TimerHandle } from '@agent/timers';
import { describe, expect, it } from 'vitest';
import { lazyLocator, locatorParseCount } from './source.js';

const TEXT = [
  'pollers:',
  '  jobs:',
  '    - id: a',
  '      kind: rss',
  '    - id: b',
  '      kind: nope',
  '',
].join('\n');

/** A scheduler the test fires by hand: the pending release, if any. */
function manualSchedule() {
  let pending: { fn: () => void; ms: number; cancelled: boolean } | undefined;
  return {
    schedule: (fn: () => void, ms: number): TimerHandle => {
      const t = { fn, ms, cancelled: false };
      pending = t;
      return { cancel: () => void (t.cancelled = true) };
    },
    fire: () => {
      if (pending && !pending.cancelled) pending.fn();
    },
    pendingMs: () => (pending && !pending.cancelled ? pending.ms : undefined),
  };
}

describe('lazyLocator', () => {
  it('builds the document tree once for a burst of issues and drops it once the keep time passes', () => {
    const clock = manualSchedule();
    const locate = lazyLocator(TEXT, 10_000, clock.schedule);
    const before = locatorParseCount();
    expect(locate(['pollers', 'jobs', 1, 'kind'])).toEqual({ line: 6, column: 13 });
    expect(locate(['pollers', 'jobs', 0], 'id')).toEqual({ line: 3, column: 7 });
    expect(locatorParseCount() - before).toBe(1);
    // Every use re-arms the release; the tree goes when the last one fires.
    expect(clock.pendingMs()).toBe(10_000);
    clock.fire();
    expect(locate(['pollers', 'jobs', 1, 'kind'])).toEqual({ line: 6, column: 13 });
    expect(locatorParseCount() - before).toBe(2);
  });

  it('releases the tree on the real clock', async () => {
    const locate = lazyLocator(TEXT, 20);
    const before = locatorParseCount();
    locate(['pollers']);
    await sleep(200);
    locate(['pollers']);
    expect(locatorParseCount() - before).toBe(2);
  });
});
