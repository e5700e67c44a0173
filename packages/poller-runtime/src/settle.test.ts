import { describe, expect, it } from 'vitest';
import { harnessPerTest, job, metricValue } from '../test/helpers.js';
import { PermanentError, TransientError, type TickContext } from '@agent/poller-core';

const MIN = 60_000;
const setup = harnessPerTest();

describe('runner: errors, breaker, alerts', () => {
  it('Transient errors back off 5 s doubling; Retry-After is honoured', async () => {
    const h = setup();
    h.fake.push(new TransientError('503'), new TransientError('429', { retryAfterMs: 120_000 }));
    await h.service.start();
    const t0 = h.clock.now();
    await h.clock.advance(0);
    expect((await h.store.load('j1'))!.nextRunAt).toBe(t0 + 5000);
    await h.clock.advance(5000);
    expect((await h.store.load('j1'))!.nextRunAt).toBe(t0 + 5000 + 120_000);
  });

  it('opens the breaker at the threshold with ONE alert, skips due ticks, probes once after 60 s', async () => {
    const h = setup();
    h.fake.setDefault(new TransientError('upstream said 503 at https://api.example.test/feed?token=s3cr3t'));
    await h.service.start();
    await h.clock.advance(0); // 1
    await h.clock.advance(5000); // 2
    await h.clock.advance(10_000); // 3 -> open
    let st = (await h.store.load('j1'))!;
    expect(st.breakerState).toBe(2);
    expect(await metricValue(h.metrics, 'poller_breaker_state', { job_id: 'j1' })).toBe(2);
    expect(await metricValue(h.metrics, 'poller_consecutive_errors', { job_id: 'j1' })).toBe(3);
    const alerts = h.dispatcher.deliveries.filter((d) => d.channel === 'chat_b');
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.to).toBe('ops');
    expect(alerts[0]!.text).toContain('j1');
    expect(alerts[0]!.text).toContain('fake');
    expect(alerts[0]!.text).toContain('transient');
    expect(alerts[0]!.text).not.toContain('s3cr3t');
    expect(st.lastFailureAlertAt).toBe(h.clock.now());
    const calls = h.fake.calls.length;
    // While open nothing runs before the probe; the probe fails and re-opens for 120 s, no new alert (cooldown).
    await h.clock.advance(59_000);
    expect(h.fake.calls.length).toBe(calls);
    await h.clock.advance(1000);
    expect(h.fake.calls.length).toBe(calls + 1);
    st = (await h.store.load('j1'))!;
    expect(st.breakerState).toBe(2);
    expect(st.breakerOpenings).toBe(2);
    expect(st.breakerRetryAt).toBe(h.clock.now() + 120_000);
    expect(h.dispatcher.deliveries.filter((d) => d.channel === 'chat_b')).toHaveLength(1);
    // A successful probe closes it and zeroes the errors.
    h.fake.setDefault({ items: [] });
    await h.clock.advance(120_000);
    st = (await h.store.load('j1'))!;
    expect(st.breakerState).toBe(0);
    expect(st.consecutiveErrors).toBe(0);
    expect(await metricValue(h.metrics, 'poller_breaker_state', { job_id: 'j1' })).toBe(0);
  });

  it('a kind that overruns its deadline (0.8 x the lease TTL) is aborted and the tick ends Transient', async () => {
    const h = setup();
    const reasons: unknown[] = [];
    const hang = (ctx: TickContext) =>
      new Promise<never>((_, reject) =>
        ctx.signal.addEventListener('abort', () => {
          reasons.push(ctx.signal.reason);
          reject(ctx.signal.reason as Error);
        }),
      );
    h.fake.push(hang, hang);
    await h.service.start();
    // Scheduled tick: every_secs 60 -> lease TTL 120 s -> deadline 96 s.
    await h.clock.advance(0);
    await h.clock.advance(95_999);
    expect(reasons).toHaveLength(0);
    await h.clock.advance(1);
    await h.service.idle();
    const st = (await h.store.load('j1'))!;
    expect(st).toMatchObject({ lastStatus: 'transient', consecutiveErrors: 1 });
    expect(st.lastError).toContain('deadline of 96000 ms');
    expect(await h.store.getLease('j1')).toMatchObject({ holder: null });
    // A manual run has the same deadline.
    const run = h.service.run('j1');
    await h.clock.advance(96_000);
    expect(await run).toMatchObject({ status: 'transient', error: expect.stringContaining('deadline') });
    expect(reasons).toHaveLength(2);
    for (const r of reasons) expect(r).toBeInstanceOf(TransientError);
  });

  it('counts due ticks as skipped while the breaker is open', async () => {
    const h = setup({ jobs: [job('j1', { schedule: { every_secs: 10 } })] });
    h.fake.setDefault(new TransientError('down'));
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(5000);
    await h.clock.advance(10_000);
    const open = (await h.store.load('j1'))!;
    expect(open.breakerState).toBe(2);
    // The list says when real work happens next: the probe, not the next skipped slot.
    const [listed] = await h.service.list();
    expect(listed!.next_run_at).toBe(new Date(open.breakerRetryAt!).toISOString());
    expect(open.nextRunAt!).toBeLessThan(open.breakerRetryAt!);
    await h.clock.advance(50_000);
    expect(
      await metricValue(h.metrics, 'poller_ticks_total', { job_id: 'j1', status: 'skipped' }),
    ).toBeGreaterThanOrEqual(3);
  });

  it('a half-open probe shows breaker state 1 while it runs', async () => {
    const h = setup();
    let release!: () => void;
    h.fake.push(
      new TransientError('a'),
      new TransientError('b'),
      new TransientError('c'),
      () => new Promise((r) => (release = () => r({ items: [] }))),
    );
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(5000);
    await h.clock.advance(10_000);
    await h.clock.advance(60_000);
    expect(await metricValue(h.metrics, 'poller_breaker_state', { job_id: 'j1' })).toBe(1);
    expect((await h.store.load('j1'))!.breakerState).toBe(1);
    release();
    await h.service.idle();
    expect(await metricValue(h.metrics, 'poller_breaker_state', { job_id: 'j1' })).toBe(0);
  });

  it('a Permanent error pauses the job and alerts once; nothing runs afterwards', async () => {
    const h = setup();
    h.fake.setDefault(new PermanentError('401 from https://mail.example.test/api?access_token=abcd1234'));
    await h.service.start();
    await h.clock.advance(0);
    const st = (await h.store.load('j1'))!;
    expect(st.paused).toBe(true);
    expect(st.lastStatus).toBe('permanent');
    expect(st.consecutiveErrors).toBe(0);
    const alerts = h.dispatcher.texts('chat_b');
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatch(/j1.*fake.*paused.*permanent/);
    expect(alerts[0]).not.toContain('abcd1234');
    await h.clock.advance(10 * MIN);
    expect(h.fake.calls).toHaveLength(1);
    expect(await metricValue(h.metrics, 'poller_ticks_total', { job_id: 'j1', status: 'permanent' })).toBe(1);
  });

  it('stamps the cooldown only after the alert was delivered', async () => {
    const h = setup();
    h.fake.setDefault(new PermanentError('revoked'));
    h.dispatcher.failWhen((m) => m.channel === 'chat_b');
    await h.service.start();
    await h.clock.advance(0);
    expect((await h.store.load('j1'))!.lastFailureAlertAt).toBeNull();
    expect(h.logger.find('poller failure alert not delivered')).toHaveLength(1);
  });

  it('without failure_to a failure is only logged', async () => {
    const h = setup({ jobs: [job('j1')] });
    h.fake.setDefault(new PermanentError('gone'));
    await h.service.start();
    await h.clock.advance(0);
    expect(h.dispatcher.deliveries).toHaveLength(0);
    expect(
      h.logger.find('poller failure alert not sent: the job has no failure_to').map((r) => r.level),
    ).toEqual(['info']);
  });

  it('anything thrown that is not Permanent counts as Transient', async () => {
    const h = setup();
    h.fake.setDefault(new Error('boom'));
    await h.service.start();
    await h.clock.advance(0);
    expect((await h.store.load('j1'))!.lastStatus).toBe('transient');
  });
});
