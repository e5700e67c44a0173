import { afterEach, describe, expect, it } from 'vitest';
import { harness, items, job, metricValue } from '../test/helpers.js';
import { createKindRegistry } from './registry.js';
import { createTestSnapshot } from './testing.js';

const MIN = 60_000;
let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops) await s();
  stops = [];
});

function next(nextJobs: ReturnType<typeof job>[], settings = {}) {
  return createTestSnapshot({
    version: 2,
    jobs: nextJobs,
    settings: { default_jitter_ms: 0, breaker_threshold: 3, ...settings },
  });
}

function setup(jobs = [job('keep'), job('chg'), job('src'), job('gone')]) {
  const h = harness({ jobs });
  stops.push(() => h.service.stop());
  return { ...h, next };
}

describe('reload', () => {
  it('applies add, replace, remove and keep; replace keeps the cursor unless the source changed', async () => {
    const h = setup();
    h.fake.setDefault({ items: items(1), cursor: 'c1' });
    await h.service.start();
    await h.clock.advance(0);
    const plan = await h.service.reload(
      h.next([
        job('keep'),
        job('chg', { config: { message_template: 'Changed {title}' } }),
        job('src', { config: { source: 's2' } }),
        job('new'),
      ]),
    );
    expect(plan).toEqual({
      add: ['new'],
      replace: ['chg', 'src'],
      remove: ['gone'],
      keep: ['keep'],
      rejected: [],
    });
    expect((await h.store.load('chg'))!.cursor).toBe('c1');
    expect((await h.store.load('src'))!.cursor).toBeNull();
    expect(await h.store.seenCount('src')).toBe(0);
    expect(await h.store.load('gone')).toBeNull();
    expect((await h.service.list()).map((j) => j.id)).toEqual(['chg', 'keep', 'new', 'src']);
    // The replaced job renders with its new template.
    h.fake.setDefault({ items: items(1, 2), cursor: 'c2' });
    await h.clock.advance(MIN);
    expect(h.dispatcher.texts()).toContain('Changed item 2');
  });

  it('previewReload answers the plan reload applies next, and touches nothing', async () => {
    const h = setup([job('keep'), job('chg'), job('gone')]);
    h.fake.setDefault({ items: [] });
    await h.service.start();
    await h.clock.advance(0);
    const target = h.next([
      job('keep'),
      job('chg', { config: { message_template: 'Changed {title}' } }),
      job('new'),
      job('bad', { agent: 'nobody' }),
    ]);
    const before = await h.service.list();
    const preview = h.service.previewReload(target);
    expect(preview).toEqual({
      add: ['new'],
      replace: ['chg'],
      remove: ['gone'],
      keep: ['keep'],
      rejected: [{ id: 'bad', errors: [expect.stringMatching(/agent "nobody" does not exist/)] }],
    });
    expect(await h.service.list()).toEqual(before);
    expect(h.service.rejectedJobs()).toEqual([]);
    expect(h.logger.find('poller job rejected')).toEqual([]);
    expect(await h.service.reload(target)).toEqual(preview);
  });

  it('previewReload validates with the kinds it is given and leaves the runner registry as it is', async () => {
    const h = setup([job('keep')]);
    h.fake.setDefault({ items: [] });
    await h.service.start();
    await h.clock.advance(0);
    const target = h.next([job('keep'), job('new')]);
    const tools = h.service.tools().map((t) => t.name);
    const none = createKindRegistry();
    const preview = h.service.previewReload(target, none);
    expect(preview.add).toEqual([]);
    expect(preview.rejected.map((r) => r.id)).toEqual(['keep', 'new']);
    expect(preview.rejected[1]!.errors).toEqual([expect.stringMatching(/is not registered/)]);
    // The runner's registry was not used, nor changed: its own preview and the reload agree.
    expect(h.service.previewReload(target)).toMatchObject({ add: ['new'], keep: ['keep'], rejected: [] });
    expect(h.service.tools().map((t) => t.name)).toEqual(tools);
    expect(await h.service.reload(target)).toMatchObject({ add: ['new'], keep: ['keep'] });
  });

  it('an invalid new definition keeps the job running on its old one', async () => {
    const h = setup([job('a')]);
    h.fake.setDefault({ items: [] });
    await h.service.start();
    await h.clock.advance(0);
    const plan = await h.service.reload(h.next([job('a', { schedule: { cron: '* * * * *' } })]));
    expect(plan.keep).toEqual(['a']);
    expect(plan.rejected).toEqual([
      {
        id: 'a',
        errors: [expect.stringMatching(/has 5 fields.*POLLER_BAD_SCHEDULE.*fix: write six fields/)],
      },
    ]);
    await h.clock.advance(MIN);
    expect(h.fake.calls).toHaveLength(2);
  });

  it('a rejected edit is logged once with its located reason, marks the job stale and counts in a gauge', async () => {
    const h = setup([job('a'), job('b')]);
    h.fake.setDefault({ items: [] });
    await h.service.start();
    await h.clock.advance(0);
    expect(await metricValue(h.metrics, 'poller_jobs_rejected', {})).toBe(0);
    const bad = h.next([
      job('a', { schedule: { cron: '* * * * *' } }),
      job('b'),
      job('c', { agent: 'nobody' }),
    ]);
    await h.service.reload(bad);
    const logged = h.logger.find('poller job rejected');
    expect(logged.map((r) => [r.level, r.fields.job_id, r.fields.running])).toEqual([
      ['error', 'a', 'previous definition'],
      ['error', 'c', undefined],
    ]);
    expect(String(logged[0]!.fields.reason)).toMatch(
      /pollers\.yaml pollers\.jobs\[0\]\.schedule\.cron: .*has 5 fields.*POLLER_BAD_SCHEDULE/,
    );
    expect(await metricValue(h.metrics, 'poller_jobs_rejected', {})).toBe(2);
    const list = await h.service.list();
    expect(list.map((j) => [j.id, j.definition])).toEqual([
      ['a', 'stale'],
      ['b', 'current'],
    ]);
    expect(list[0]!.definition_error).toMatch(/has 5 fields/);
    expect((await h.service.show('a')).definition).toBe('stale');
    expect(h.service.rejectedJobs()).toEqual([
      { id: 'a', errors: [expect.stringMatching(/has 5 fields/)], running: true },
      { id: 'c', errors: [expect.stringMatching(/agent "nobody" does not exist/)], running: false },
    ]);
    // The same rejection at the next reload is not news; fixing it clears everything.
    await h.service.reload(bad);
    expect(h.logger.find('poller job rejected')).toHaveLength(2);
    await h.service.reload(h.next([job('a'), job('b')]));
    expect((await h.service.list()).map((j) => j.definition)).toEqual(['current', 'current']);
    expect(await metricValue(h.metrics, 'poller_jobs_rejected', {})).toBe(0);
    expect(h.service.rejectedJobs()).toEqual([]);
  });

  it('an in-flight tick of a removed job is aborted and cannot write state; its metric series are deleted', async () => {
    const h = setup([job('a')]);
    h.fake.push({ items: [] });
    let release!: () => void;
    h.fake.push(
      (ctx) =>
        new Promise((resolve) => {
          release = () => resolve({ items: items(9), cursor: 'late' });
          ctx.signal.addEventListener('abort', () => release());
        }),
    );
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    expect(await metricValue(h.metrics, 'poller_ticks_total', { job_id: 'a', status: 'ok' })).toBe(1);
    const plan = await h.service.reload(h.next([]));
    expect(plan.remove).toEqual(['a']);
    expect(await h.store.load('a')).toBeNull();
    expect(h.dispatcher.deliveries).toHaveLength(0);
    expect(await metricValue(h.metrics, 'poller_ticks_total', { job_id: 'a', status: 'ok' })).toBeUndefined();
    expect(await h.metrics.metrics()).not.toContain('job_id="a"');
  });

  it('a replaced job in flight is aborted; the old tick never writes the new state', async () => {
    const h = setup([job('a')]);
    h.fake.push({ items: [], cursor: 'base' });
    h.fake.push(
      (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => resolve({ items: [], cursor: 'stale' }));
        }),
    );
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    await h.service.reload(h.next([job('a', { config: { message_template: 'v2 {title}' } })]));
    expect((await h.store.load('a'))!.cursor).toBe('base');
  });

  it('changed global knobs apply to kept jobs', async () => {
    const h = setup([job('a')]);
    h.fake.setDefault(new Error('down'));
    await h.service.start();
    await h.clock.advance(0);
    await h.service.reload(h.next([job('a')], { breaker_threshold: 2 }));
    await h.clock.advance(5000);
    expect((await h.store.load('a'))!.breakerState).toBe(2);
  });

  it('enabled: false removes every job', async () => {
    const h = setup([job('a')]);
    await h.service.start();
    const plan = await h.service.reload(h.next([job('a')], { enabled: false }));
    expect(plan.remove).toEqual(['a']);
  });
});
