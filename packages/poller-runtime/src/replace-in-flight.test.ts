import { describe, expect, it } from 'vitest';
import { harnessPerTest, items, job } from '../test/helpers.js';
import type { DeliveryRequest } from './tick-types.js';
import { createTestSnapshot } from './testing.js';

const MIN = 60_000;
const setup = harnessPerTest();

function next(jobs: ReturnType<typeof job>[]) {
  return createTestSnapshot({ version: 2, jobs, settings: { default_jitter_ms: 0, breaker_threshold: 3 } });
}

/**
 * The job `a` baselined on item 1, then its tick fetches `fresh`: the channel accepts the first new item at
 * once but answers only when `release` is called. `inFlight` resolves when that item was accepted.
 */
async function deliveryInFlight(fresh: ReturnType<typeof items>) {
  const h = setup({ jobs: [job('a')] });
  h.fake.setDefault({ items: items(1) });
  await h.service.start();
  await h.clock.advance(0);
  h.fake.setDefault({ items: fresh });
  const accept = h.dispatcher.deliver.bind(h.dispatcher);
  let release!: () => void;
  const answer = new Promise<void>((r) => (release = r));
  let accepted!: () => void;
  const inFlight = new Promise<void>((r) => (accepted = r));
  h.dispatcher.deliver = async (m: DeliveryRequest) => {
    await accept(m);
    h.dispatcher.deliver = accept;
    accepted();
    await answer;
  };
  const tick = h.clock.advance(MIN);
  await inFlight;
  return { h, release, tick };
}

describe('a replace or remove while a delivery is in flight', () => {
  it('a replace records the accepted item: the new definition sends the rest, never that item again', async () => {
    const { h, release, tick } = await deliveryInFlight(items(1, 2, 3));
    const reload = h.service.reload(next([job('a', { config: { message_template: 'v2 {title}' } })]));
    await new Promise((r) => setImmediate(r));
    release();
    await tick;
    expect((await reload).replace).toEqual(['a']);
    await h.service.idle?.();
    // The old tick stopped before its next send; the new definition (due at once) sent item 3.
    expect(h.dispatcher.texts()).toEqual(['New: item 2', 'v2 item 3']);
    expect((await h.store.deliveries('a')).map((d) => d.itemId)).toEqual(['2', '3']);
    await h.clock.advance(MIN);
    await h.service.idle?.();
    expect(h.dispatcher.texts()).toHaveLength(2);
  });

  it('a replace with another source still baselines the new source: the old record is cleared', async () => {
    const { h, release, tick } = await deliveryInFlight(items(1, 2));
    const reload = h.service.reload(next([job('a', { config: { source: 's2' } })]));
    await new Promise((r) => setImmediate(r));
    h.fake.setDefault({ items: items(5) });
    release();
    await tick;
    await reload;
    await h.service.idle?.();
    // The new source's baseline holds only its own item: the old record went with the old seen set.
    expect((await h.store.load('a'))!.baselined).toBe(true);
    expect(await h.store.seenCount('a')).toBe(1);
    expect(h.dispatcher.texts()).toEqual(['New: item 2']);
  });

  it('a remove records nothing and deletes the job', async () => {
    const { h, release, tick } = await deliveryInFlight(items(1, 2, 3));
    const reload = h.service.reload(next([]));
    await new Promise((r) => setImmediate(r));
    release();
    await tick;
    expect((await reload).remove).toEqual(['a']);
    expect(await h.store.load('a')).toBeNull();
    expect(await h.store.seenCount('a')).toBe(0);
    expect(h.dispatcher.texts()).toEqual(['New: item 2']);
  });
});
