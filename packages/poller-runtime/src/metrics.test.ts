import { Registry, renderMetrics } from '@agent/metrics-text';
import { describe, expect, it } from 'vitest';
import { harnessPerTest, items, job, metricValue } from '../test/helpers.js';
import { PermanentError, type TickContext } from '@agent/poller-core';
import { createPollerMetrics } from './metrics.js';
import { createTestSnapshot } from './testing.js';

const MIN = 60_000;
const setup = harnessPerTest();

/** A kind tick that gives the same warnings every time. */
const warnEvery = (ctx: TickContext) => {
  ctx.logger.warn('fake item skipped', { item: 'x' });
  ctx.logger.child({ part: 'p' }).warn('fake item skipped', { item: 'y' });
  ctx.logger.warn('fake other warning');
  return Promise.resolve({ items: [] });
};

describe('metrics', () => {
  it('exposes the spec series with the spec labels', async () => {
    const h = setup();
    h.fake.push({ items: [] }, { items: items(1, 2) });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    const text = await h.metrics.metrics();
    expect(text).toContain('poller_ticks_total{kind="fake",agent="assistant",job_id="j1",status="ok"} 2');
    expect(text).toContain('poller_items_seen_total{kind="fake",agent="assistant",job_id="j1"} 2');
    expect(text).toContain('poller_items_dispatched_total{kind="fake",agent="assistant",job_id="j1"} 2');
    expect(text).toContain('poller_latency_ms_bucket{le="10",kind="fake",agent="assistant",job_id="j1"}');
    expect(text).toContain('poller_consecutive_errors{job_id="j1"} 0');
    expect(text).toContain('poller_breaker_state{job_id="j1"} 0');
    // The scrape renders the per-job series itself: the same bytes as prom-client's rendering.
    expect(await renderMetrics(h.metrics)).toBe(text);
  });

  it('gives poller_latency_ms 8 buckets, 10 ms ... 60 s, counted cumulatively', async () => {
    const h = setup();
    await h.service.start();
    await h.clock.advance(0);
    const text = await renderMetrics(h.metrics);
    const les = [...text.matchAll(/^poller_latency_ms_bucket\{le="([^"]+)",.*job_id="j1"\} (\d+)$/gm)];
    expect(les.map((m) => m[1]).join(' ')).toBe('10 50 100 250 1000 2500 10000 60000 +Inf');
    // The fake kind answers at once on the fake clock: 0 ms, in every bucket.
    expect(les.map((m) => m[2])).toEqual(Array(9).fill('1'));
    expect(text).toMatch(/^# TYPE poller_latency_ms histogram$/m);
  });

  it('a warning a kind repeats at every tick is logged once per job definition and counted', async () => {
    const h = setup({ jobs: [job('j1'), job('j2')] });
    h.fake.setDefault(warnEvery);
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(MIN);
    await h.clock.advance(MIN);
    const logged = h.logger.find('fake item skipped');
    expect(logged.map((r) => r.fields.job_id).sort()).toEqual(['j1', 'j2']);
    expect(logged[0]!.fields.repeats).toMatch(/once per job definition/);
    expect(h.logger.find('fake other warning')).toHaveLength(2);
    expect(await metricValue(h.metrics, 'poller_kind_warnings_total', { job_id: 'j1' })).toBe(9);
    // A replaced definition logs it again, once.
    await h.service.reload(
      createTestSnapshot({
        version: 2,
        jobs: [job('j1', { config: { message_template: 'v2 {title}' } }), job('j2')],
        settings: { default_jitter_ms: 0, breaker_threshold: 3 },
      }),
    );
    await h.clock.advance(MIN);
    expect(h.logger.find('fake item skipped').filter((r) => r.fields.job_id === 'j1')).toHaveLength(2);
  });

  it('shows paused jobs and the last success in gauges, from the stored state after a restart too', async () => {
    const h = setup();
    h.fake.push({ items: [] }, new PermanentError('gone'));
    await h.service.start();
    expect(await metricValue(h.metrics, 'poller_paused', { job_id: 'j1' })).toBe(0);
    await h.clock.advance(0);
    const okAt = h.clock.now() / 1000;
    expect(await metricValue(h.metrics, 'poller_last_success_timestamp_seconds', { job_id: 'j1' })).toBe(
      okAt,
    );
    await h.clock.advance(MIN);
    expect(await metricValue(h.metrics, 'poller_paused', { job_id: 'j1' })).toBe(1);
    expect(await metricValue(h.metrics, 'poller_last_success_timestamp_seconds', { job_id: 'j1' })).toBe(
      okAt,
    );
    await h.service.stop();
    // A new service on the same store (a restart): the auto-paused job is still visible.
    const again = setup({ jobs: [job('j1')], store: h.store, clock: h.clock });
    await again.service.start();
    expect(await metricValue(again.metrics, 'poller_paused', { job_id: 'j1' })).toBe(1);
    await again.service.resume('j1');
    expect(await metricValue(again.metrics, 'poller_paused', { job_id: 'j1' })).toBe(0);
  });
});

describe('poller metrics and label objects', () => {
  it("a caller's mutable labels object changed between ticks counts in the series of its new values", async () => {
    const registry = new Registry();
    const metrics = createPollerMetrics(registry);
    const labels = { kind: 'rss', agent: 'a', job_id: 'one' };
    metrics.tick(labels, 'ok');
    labels.job_id = 'two';
    metrics.tick(labels, 'ok');
    const text = await renderMetrics(registry);
    expect(text).toContain('poller_ticks_total{kind="rss",agent="a",job_id="one",status="ok"} 1');
    expect(text).toContain('poller_ticks_total{kind="rss",agent="a",job_id="two",status="ok"} 1');
  });
});
