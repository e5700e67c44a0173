// Source keys as rows written before keys were hashed hold them: the same source keeps its state.
import { afterEach, describe, expect, it } from 'vitest';
import { harness, items, job } from '../test/helpers.js';
import { hashSourceKey } from '@agent/poller-core';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup) await c();
  cleanup = [];
});

const MIN = 60_000;

async function withStoredKey(key: string) {
  const h = harness({ jobs: [job('j1')] });
  cleanup.push(() => h.service.stop());
  await h.store.init('j1', { sourceKey: key });
  await h.store.commit('j1', { state: { baselined: true, cursor: { v: 1 } }, addSeen: ['a', 'b'] });
  h.fake.push({ items: items('a', 'b', 'c'), cursor: { v: 2 } });
  await h.service.start();
  await h.clock.advance(MIN);
  return h;
}

describe('stored source keys', () => {
  it('an identity stored in clear for the same source keeps cursor and seen ids, and becomes its hash', async () => {
    const h = await withStoredKey('fake:{"source":"s1"}');
    expect(h.dispatcher.texts()).toEqual(['New: item c']);
    expect(h.fake.calls[0]!.cursor).toEqual({ v: 1 });
    expect(h.logger.find('poller source changed: the job will baseline again')).toEqual([]);
    expect((await h.store.load('j1'))!.sourceKey).toBe(hashSourceKey('fake:{"source":"s1"}'));
  });

  it('an identity stored in clear for another source baselines again', async () => {
    const h = await withStoredKey('fake:{"source":"s0"}');
    expect(h.dispatcher.texts()).toEqual([]);
    expect(h.fake.calls[0]!.cursor).toBeNull();
    expect(h.logger.find('poller source changed: the job will baseline again')).toHaveLength(1);
    expect((await h.store.load('j1'))!.sourceKey).toBe(hashSourceKey('fake:{"source":"s1"}'));
  });
});
