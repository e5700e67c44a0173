// Source keys as rows written before keys were hashed hold them: the same source keeps its state.
import { afterEach, describe, expect, it } from 'vitest';
import { harness, items, job } from '../test/helpers.js';
import { definePollerKind, withBaseConfig } from '@agent/poller-core';
import { hashSourceKey, sameSource, sourceKeyOf } from './source-key.js';

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

const base = {
  kind: 'demo',
  apiVersion: 1 as const,
  configSchema: withBaseConfig({}),
  placeholders: ['a'],
  tick: async () => ({ items: [] }),
};

describe('sourceKeyOf', () => {
  it('ignores template, deliver, max_per_tick and dispatch_delay_ms', () => {
    const k = definePollerKind(base);
    const a = sourceKeyOf(k, {
      url: 'u',
      message_template: 'a',
      deliver: { channel: 'c', to: 't' },
      max_per_tick: 1,
    });
    const b = sourceKeyOf(k, { message_template: 'b', url: 'u', dispatch_delay_ms: 9 });
    expect(a).toBe(b);
    expect(sourceKeyOf(k, { url: 'v' })).not.toBe(a);
  });

  it('is a hash of the identity: no config value, URL or secret in it', () => {
    const k = definePollerKind({ ...base, sourceKey: (c: Record<string, unknown>) => String(c.url) });
    const key = sourceKeyOf(k, { url: 'https://api.example.org/tok-5f2e9a/items' });
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(key).toBe(hashSourceKey('demo:https://api.example.org/tok-5f2e9a/items'));
    expect(sourceKeyOf(definePollerKind(base), { url: 'tok-5f2e9a' })).not.toContain('tok-5f2e9a');
  });

  it('accepts a key stored before keys were hashed for the same source, and nothing else', () => {
    const k = definePollerKind(base);
    const current = sourceKeyOf(k, { url: 'u' });
    expect(sameSource(current, current)).toBe(true);
    expect(sameSource('demo:{"url":"u"}', current)).toBe(true);
    expect(sameSource('demo:{"url":"v"}', current)).toBe(false);
    expect(sameSource(sourceKeyOf(k, { url: 'v' }), current)).toBe(false);
    expect(sameSource(null, current)).toBe(false);
    // A hash is not taken for the identity it hashes.
    expect(sameSource(hashSourceKey(current), current)).toBe(false);
    expect(sameSource(current, hashSourceKey(current))).toBe(true);
  });
});
