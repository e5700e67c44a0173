import { describe, expect, it } from 'vitest';
import { harness, harnessPerTest, items, job } from '../test/helpers.js';
import { createFakeClock, createMemoryStateStore } from './testing.js';

const MIN = 60_000;
const setup = harnessPerTest();

describe('operator API', () => {
  it('run bypasses the schedule, persists and returns counts', async () => {
    const h = setup();
    h.fake.push({ items: items(1) }, { items: items(1, 2), cursor: 'k' });
    await h.service.start();
    await h.clock.advance(0);
    const before = (await h.store.load('j1'))!.nextRunAt;
    const r = await h.service.run('j1');
    expect(r).toEqual({ status: 'ok', items_seen: 1, items_dispatched: 1 });
    expect((await h.store.load('j1'))!.cursor).toBe('k');
    expect((await h.store.load('j1'))!.nextRunAt).toBe(before);
  });

  it('run never overlaps a scheduled tick of the same job', async () => {
    const h = setup();
    let release!: () => void;
    h.fake.push(() => new Promise((r) => (release = () => r({ items: [] }))));
    await h.service.start();
    await h.clock.advance(0);
    const run = h.service.run('j1');
    await h.clock.advance(0);
    expect(h.fake.calls).toHaveLength(1);
    release();
    await run;
    expect(h.fake.calls).toHaveLength(2);
    expect(h.fake.maxConcurrent()).toBe(1);
  });

  it('pause stops ticks, resume brings one tick soon, not a backlog', async () => {
    const h = setup();
    await h.service.start();
    await h.clock.advance(0);
    await h.service.pause('j1');
    await h.clock.advance(60 * MIN);
    expect(h.fake.calls).toHaveLength(1);
    const s = await h.service.resume('j1');
    expect(s.paused).toBe(false);
    await h.clock.advance(0);
    expect(h.fake.calls).toHaveLength(2);
  });

  it('reset clears cursor, seen ids, errors and breaker, keeps paused, and the next tick baselines', async () => {
    const h = setup();
    h.fake.push({ items: items(1), cursor: 'c' }, { items: items(1, 2), cursor: 'd' });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['New: item 2']);
    await h.service.pause('j1');
    await h.service.reset('j1');
    const st = (await h.store.load('j1'))!;
    expect(st).toMatchObject({
      cursor: null,
      baselined: false,
      paused: true,
      consecutiveErrors: 0,
      breakerState: 0,
    });
    expect(await h.store.seenCount('j1')).toBe(0);
    await h.service.resume('j1');
    h.fake.push({ items: items(1, 2, 3) });
    await h.clock.advance(0);
    expect(h.dispatcher.texts()).toEqual(['New: item 2']);
    expect(h.fake.calls.at(-1)!.cursor).toBeNull();
  });

  it('unknown ids fail with POLLER_UNKNOWN_JOB', async () => {
    const h = setup();
    await h.service.start();
    await expect(h.service.show('nope')).rejects.toMatchObject({ code: 'POLLER_UNKNOWN_JOB' });
    await expect(h.service.run('nope')).rejects.toMatchObject({ code: 'POLLER_UNKNOWN_JOB' });
  });

  it('list and show report status without secrets', async () => {
    const h = setup({
      secrets: ['tok-123456'],
      jobs: [job('j1', { config: { source: 'https://x.test/?k=tok-123456' } })],
    });
    await h.service.start();
    await h.clock.advance(0);
    const [s] = await h.service.list();
    expect(s).toMatchObject({
      id: 'j1',
      kind: 'fake',
      agent: 'assistant',
      schedule: 'every 60s',
      paused: false,
      breaker: 'closed',
      last_status: 'ok',
    });
    const d = await h.service.show('j1');
    expect(JSON.stringify(d)).not.toContain('tok-123456');
    expect(d.lease).toMatchObject({ holder: null });
  });

  it('paused_on_boot writes paused = 1 at every start', async () => {
    const clock = createFakeClock();
    const store = createMemoryStateStore({ now: clock.now });
    const a = harness({ clock, store, jobs: [job('j1', { paused_on_boot: true })] });
    await a.service.start();
    expect((await store.load('j1'))!.paused).toBe(true);
    await a.service.resume('j1');
    await a.service.stop();
    const b = harness({ clock, store, jobs: [job('j1', { paused_on_boot: true })] });
    await b.service.start();
    expect((await store.load('j1'))!.paused).toBe(true);
    await b.service.stop();
  });
});
