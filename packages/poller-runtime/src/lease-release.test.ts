// A lease whose release failed (the database went away at the end of a tick) is released once the database
// answers again. In cluster mode only a due row is claimed, and a held row is due when its lease expires: a
// lease left held by a live daemon would stop the job for its whole TTL (48 h for a daily job).
import { describe, expect, it } from 'vitest';
import { sleep } from '@agent/timers';
import { clusterPerTest, everySecond, until } from '../test/cluster-helpers.js';
import type { ClaimingStore } from './claiming-store.js';

const node = clusterPerTest();

/** Every call fails while `down()` holds, as it does while the database restarts. */
function failingWhile(store: ClaimingStore, down: () => boolean): ClaimingStore {
  return new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) =>
        down()
          ? Promise.reject(new Error('Connection terminated unexpectedly'))
          : (v as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
}

describe('a lease whose release failed', () => {
  it('is released once the store answers again, and the job ticks on well before its 48 h TTL', async () => {
    let down = false;
    const n = await node({
      holderId: 'A#1',
      jobs: everySecond(1),
      // every_secs 1 x 172,800: a 48 h lease.
      settings: { lease_ttl_factor: 172_800 },
      wrapStore: (s) => failingWhile(s, () => down),
    });
    let ticks = 0;
    n.kind.setDefault(async () => {
      // The second tick loses the database right after its fetch: its last write and the release fail.
      if (++ticks === 2) {
        down = true;
        void sleep(300).then(() => (down = false));
      }
      return { items: [] };
    });
    await n.runner.start();
    await until(() => ticks >= 2 && !down);
    // The database is back, and the row still says this daemon holds the job for two days.
    expect(await n.store.clusterJob('j0')).toMatchObject({ holder: 'A#1' });
    await until(() => ticks >= 4, 8000);
    await n.runner.stop();
    expect(n.logger.records.map((r) => r.msg)).toContain(
      'poller lease not released: the store failed; retrying until it answers',
    );
  });
});
