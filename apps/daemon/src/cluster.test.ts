// The cluster pool's idle-in-transaction limit against the failover window.
import { describe, expect, it } from 'vitest';
import { idleInTransactionTimeoutMs } from './cluster.js';

describe('idle-in-transaction timeout of the cluster pool', () => {
  it.each([
    // [interval, stale after] → limit: a stopped member's transaction ends before it may be declared dead.
    [1000, 3000, 2000],
    [5000, 15_000, 10_000],
    [1000, 10_000, 6666],
    // Long windows keep the pool's default.
    [10_000, 60_000, 15_000],
  ])('heartbeat every %i ms, stale after %i ms: %i ms', (intervalMs, staleAfterMs, limit) => {
    const got = idleInTransactionTimeoutMs({ intervalMs, staleAfterMs });
    expect(got).toBe(limit);
    // Its last statement came within one heartbeat of its last heartbeat (at most a third of the window).
    expect(intervalMs + got).toBeLessThanOrEqual(staleAfterMs);
  });
});
