import { describe, expect, it } from 'vitest';
import { harnessPerTest, items, job, scriptedKind } from '../test/helpers.js';

const MIN = 60_000;
const setup = harnessPerTest();

describe('runner: baseline, dedup, delivery', () => {
  it('the first tick records a baseline and delivers nothing; later ticks deliver only new items, oldest first', async () => {
    const h = setup();
    h.fake.push(
      { items: items('a', 'b'), cursor: { v: 1 } },
      { items: items('a', 'b', 'c', 'd'), cursor: { v: 2 } },
    );
    await h.service.start();
    await h.clock.advance(0);
    expect(h.dispatcher.deliveries).toHaveLength(0);
    expect((await h.store.load('j1'))!.cursor).toEqual({ v: 1 });
    expect(h.logger.find('poller baseline recorded')).toHaveLength(1);
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['New: item c', 'New: item d']);
    expect(h.dispatcher.deliveries[0]).toMatchObject({
      agentId: 'assistant',
      channel: 'chat_a',
      to: 'u1',
      jobId: 'j1',
      itemId: 'c',
    });
    expect((await h.store.load('j1'))!.cursor).toEqual({ v: 2 });
    expect(h.fake.calls[1]!.cursor).toEqual({ v: 1 });
  });

  it('never delivers an item twice, also when a result repeats an id', async () => {
    const h = setup();
    h.fake.push({ items: [] }, { items: [...items('x'), ...items('x')] }, { items: items('x') });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['New: item x']);
  });

  it('max_per_tick delivers oldest first and carries the rest over without committing the cursor', async () => {
    const h = setup({ jobs: [job('j1', { config: { max_per_tick: 2 } })] });
    h.fake.push({ items: [], cursor: 'etag-0' });
    h.fake.setDefault({ items: items(1, 2, 3, 4, 5), cursor: 'etag-1' });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2']);
    expect((await h.store.load('j1'))!.cursor).toBe('etag-0');
    await h.clock.advance(MIN);
    expect((await h.store.load('j1'))!.cursor).toBe('etag-0');
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(5);
    expect((await h.store.load('j1'))!.cursor).toBe('etag-1');
  });

  it('commits each item as it is accepted; a failed send ends the tick Transient and the rest follow next tick', async () => {
    const h = setup();
    h.fake.push({ items: [] });
    h.fake.setDefault({ items: items(1, 2, 3), cursor: 'c1' });
    await h.service.start();
    await h.clock.advance(0);
    h.dispatcher.failWhen((m) => m.itemId === '2');
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['New: item 1']);
    const st = (await h.store.load('j1'))!;
    expect(st.lastStatus).toBe('transient');
    expect(st.consecutiveErrors).toBe(1);
    expect(st.cursor).toBeNull();
    expect(st.lastError).toMatch(/delivery to channel chat_a failed/);
    expect(h.store.seenIds('j1')).toContain('1');
    expect(await h.store.deliveries('j1')).toEqual([expect.objectContaining({ itemId: '1' })]);
    h.dispatcher.failWhen(null);
    await h.clock.advance(5000); // first retry: 5 s x 2^0
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2', 'New: item 3']);
    expect((await h.store.load('j1'))!.cursor).toBe('c1');
  });

  it('a follow-up (onDelivered) failure is logged and never repeats the item', async () => {
    const h = setup();
    let marks = 0;
    const it1 = {
      id: 'm1',
      fields: { title: 'mail' },
      onDelivered: async () => {
        marks++;
        throw new Error('mark-read failed');
      },
    };
    h.fake.push({ items: [] }, { items: [it1] }, { items: [it1] });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['New: mail']);
    expect(marks).toBe(1);
    expect(h.logger.find('poller item follow-up failed after delivery')).toHaveLength(1);
  });

  it('backfillOnFirstTick kinds deliver on their first tick', async () => {
    const k = scriptedKind('fake', { backfillOnFirstTick: true });
    const h = setup({ kinds: [k] });
    k.push({ items: items('old1', 'old2') });
    await h.service.start();
    await h.clock.advance(0);
    expect(h.dispatcher.texts()).toEqual(['New: item old1', 'New: item old2']);
  });

  it('dispatch_delay_ms spaces deliveries, and a pause stops the tick promptly', async () => {
    const h = setup({ jobs: [job('j1', { config: { dispatch_delay_ms: 10_000 } })] });
    h.fake.push({ items: [] }, { items: items(1, 2, 3) });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['New: item 1']);
    await h.service.pause('j1');
    await h.clock.advance(60 * MIN);
    expect(h.dispatcher.texts()).toEqual(['New: item 1']);
    expect((await h.store.load('j1'))!.paused).toBe(true);
  });

  it('a seen set stays bounded but never evicts ids present in the latest result', async () => {
    const h = setup();
    const many = Array.from({ length: 600 }, (_, i) => `id${i}`);
    h.fake.push({ items: items(...many) });
    h.fake.setDefault({ items: items(...many) });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    expect(h.dispatcher.deliveries).toHaveLength(0);
    expect(await h.store.seenCount('j1')).toBe(600);
  });
});
