import { afterEach, describe, expect, it } from 'vitest';
import { harness, items, job, metricValue, scriptedKind } from '../test/helpers.js';
import { PermanentError, TransientError, type TickContext } from '@agent/poller-core';
import { createFakeClock, createMemoryStateStore, createTestSnapshot } from './testing.js';
import type { CommitOps } from './store.js';

const MIN = 60_000;
let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup) await c();
  cleanup = [];
});

function setup(opts: Parameters<typeof harness>[0] = {}) {
  const h = harness({ jobs: [job('j1', { failure_to: { channel: 'chat_b', to: 'ops' } })], ...opts });
  cleanup.push(() => h.service.stop());
  return h;
}

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

describe('scheduler in the service', () => {
  it('restart continuity: the persisted next_run_at is used, and a long outage gives ONE catch-up tick', async () => {
    const clock = createFakeClock();
    const store = createMemoryStateStore({ now: clock.now });
    const a = harness({ clock, store, jobs: [job('j1')] });
    await a.service.start();
    await a.clock.advance(0);
    await a.clock.advance(MIN);
    expect(a.fake.calls).toHaveLength(2);
    const next = (await store.load('j1'))!.nextRunAt!;
    await a.service.stop();
    // Restart before the slot: the same slot is kept.
    const b = harness({ clock, store, jobs: [job('j1')] });
    await b.service.start();
    expect((await store.load('j1'))!.nextRunAt).toBe(next);
    await b.service.stop();
    // Down for 10 intervals.
    await clock.advance(10 * MIN);
    const c = harness({ clock, store, jobs: [job('j1')] });
    await c.service.start();
    await c.clock.advance(0);
    expect(c.fake.calls).toHaveLength(1);
    const after = (await store.load('j1'))!;
    expect(after.nextRunAt).toBeGreaterThan(clock.now());
    expect(after.nextRunAt! - clock.now()).toBeLessThanOrEqual(MIN);
    await c.clock.advance(MIN - 1);
    await c.service.stop();
  });

  it('an `at` job 30 days away does not fire early, fires once, stays paused across restarts', async () => {
    const clock = createFakeClock('2026-01-01T00:00:00Z');
    const store = createMemoryStateStore({ now: clock.now });
    const spec = job('once', { schedule: { at: '2026-01-31T00:00:00Z' } });
    const a = harness({ clock, store, jobs: [spec] });
    a.fake.setDefault({ items: [] });
    await a.service.start();
    await a.clock.advance(29 * 24 * 60 * MIN);
    expect(a.fake.calls).toHaveLength(0);
    await a.clock.advance(24 * 60 * MIN);
    expect(a.fake.calls).toHaveLength(1);
    expect((await store.load('once'))!).toMatchObject({
      paused: true,
      atFired: expect.stringMatching(/^at:/),
    });
    await a.service.stop();
    const b = harness({ clock, store, jobs: [spec] });
    await b.service.start();
    await b.clock.advance(60 * MIN);
    expect(b.fake.calls).toHaveLength(0);
    await b.service.stop();
    // A changed `at` re-arms the job.
    const c = harness({ clock, store, jobs: [job('once', { schedule: { at: '2026-02-01T12:00:00Z' } })] });
    await c.service.start();
    expect((await store.load('once'))!.paused).toBe(false);
    await c.clock.advance(2 * 24 * 60 * MIN);
    expect(c.fake.calls).toHaveLength(1);
    await c.service.stop();
  });

  it('an `at` missed while down fires once at boot', async () => {
    const clock = createFakeClock('2026-03-01T00:00:00Z');
    const h = harness({ clock, jobs: [job('once', { schedule: { at: '2026-02-01T00:00:00Z' } })] });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(60 * MIN);
    expect(h.fake.calls).toHaveLength(1);
    await h.service.stop();
  });

  it('cron jobs run at their fire times in their tz', async () => {
    const clock = createFakeClock('2026-01-05T00:00:00Z');
    const h = harness({
      clock,
      jobs: [job('c1', { schedule: { cron: '0 0 9 * * *', tz: 'America/New_York' } })],
    });
    await h.service.start();
    expect((await h.store.load('c1'))!.nextRunAt).toBe(Date.parse('2026-01-05T14:00:00Z'));
    await h.clock.advance(14 * 60 * MIN);
    expect(h.fake.calls).toHaveLength(1);
    expect((await h.store.load('c1'))!.nextRunAt).toBe(Date.parse('2026-01-06T14:00:00Z'));
    await h.service.stop();
  });
});

/** Counts the store's write calls (a commit that also releases the lease is one write). */
function countingStore(clock: ReturnType<typeof createFakeClock>) {
  const real = createMemoryStateStore({ now: clock.now });
  const writes: string[] = [];
  const store = new Proxy(real, {
    get(target, prop: string) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (['init', 'commit', 'acquireLease', 'renewLease', 'releaseLease', 'revokeLease'].includes(prop))
          writes.push(prop === 'commit' && (args[1] as CommitOps).releaseLease ? 'commit+release' : prop);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, writes };
}

describe('transactions per tick', () => {
  it('an ok scheduled tick makes two writes: the lease grant and one commit that releases it', async () => {
    const clock = createFakeClock();
    const { store, writes } = countingStore(clock);
    const h = harness({ clock, store, jobs: [job('j1')] });
    h.fake.push({ items: items('a') }, { items: items('a') });
    await h.service.start();
    await h.clock.advance(0);
    writes.length = 0;
    await h.clock.advance(MIN);
    await h.service.idle();
    expect(h.fake.calls).toHaveLength(2);
    expect(writes).toEqual(['acquireLease', 'commit+release']);
    expect(await store.getLease('j1')).toMatchObject({ holder: null });
    await h.service.stop();
  });

  it('a tick that opens the breaker releases the lease only after the alert stamped its cooldown', async () => {
    const clock = createFakeClock();
    const { store, writes } = countingStore(clock);
    const h = harness({
      clock,
      store,
      settings: { breaker_threshold: 1 },
      jobs: [job('j1', { failure_to: { channel: 'chat_b', to: 'ops' } })],
    });
    h.fake.push(new TransientError('down'));
    await h.service.start();
    await h.clock.advance(0);
    await h.service.idle();
    expect(h.dispatcher.texts()).toEqual([expect.stringContaining('opened its breaker')]);
    expect(writes.slice(-4)).toEqual(['acquireLease', 'commit', 'commit', 'releaseLease']);
    expect((await store.load('j1'))!.lastFailureAlertAt).toBe(clock.now());
    expect(await store.getLease('j1')).toMatchObject({ holder: null });
    await h.service.stop();
  });
});

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
    expect(text).toContain('poller_latency_ms_bucket{le="5",kind="fake",agent="assistant",job_id="j1"}');
    expect(text).toContain('poller_consecutive_errors{job_id="j1"} 0');
    expect(text).toContain('poller_breaker_state{job_id="j1"} 0');
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
    const again = harness({ jobs: [job('j1')], store: h.store, clock: h.clock });
    cleanup.push(() => again.service.stop());
    await again.service.start();
    expect(await metricValue(again.metrics, 'poller_paused', { job_id: 'j1' })).toBe(1);
    await again.service.resume('j1');
    expect(await metricValue(again.metrics, 'poller_paused', { job_id: 'j1' })).toBe(0);
  });
});

describe('dead lease holders', () => {
  it('at start, a lease held by a dead holder is taken over at once, counted and logged', async () => {
    const h = setup({ jobs: [job('j1', { schedule: { cron: '0 0 9 * * *' } })] });
    // A daily job whose previous daemon died mid-tick: its lease would block the job for two days.
    await h.store.init('j1');
    await h.store.acquireLease('j1', 'host:4242:99:dead', 2 * 86_400_000);
    const gone: string[] = [];
    const h2 = harness({
      jobs: [job('j1', { schedule: { cron: '0 0 9 * * *' } })],
      store: h.store,
      clock: h.clock,
      holderGone: (holder) => (gone.push(holder), holder.endsWith(':dead')),
    });
    cleanup.push(() => h2.service.stop());
    await h2.service.start();
    expect(gone).toEqual(['host:4242:99:dead']);
    expect(await h.store.getLease('j1')).toMatchObject({ holder: null, epoch: 2 });
    expect(await metricValue(h2.metrics, 'poller_lease_takeovers_total', { job_id: 'j1' })).toBe(1);
    expect(h2.logger.find('poller lease taken over: its holder process is gone')).toHaveLength(1);
  });

  it('leaves a live holder, an expired lease and our own lease alone', async () => {
    const h = setup({ jobs: [job('a'), job('b'), job('c')] });
    await h.store.acquireLease('a', 'host:1:1:alive', 600_000);
    await h.store.acquireLease('b', 'host:2:2:dead', 1);
    await h.clock.advance(10);
    await h.store.acquireLease('c', 'holder-b', 600_000);
    const h2 = harness({
      jobs: [job('a'), job('b'), job('c')],
      store: h.store,
      clock: h.clock,
      holderId: 'holder-b',
      holderGone: (holder) => holder.endsWith(':dead'),
    });
    cleanup.push(() => h2.service.stop());
    await h2.service.start();
    expect(await h.store.getLease('a')).toMatchObject({ holder: 'host:1:1:alive' });
    expect(await metricValue(h2.metrics, 'poller_lease_takeovers_total', { job_id: 'b' })).toBeUndefined();
    expect(h2.logger.find('poller lease taken over: its holder process is gone')).toHaveLength(0);
  });
});

describe('tools', () => {
  it('offers the six pollers_* tools: every job is visible, only own jobs change; each call is logged', async () => {
    const h = setup({
      agents: { assistant: { channels: ['chat_a', 'chat_b'] }, other: { channels: ['chat_a'] } },
      jobs: [job('j1'), job('j2', { agent: 'other' })],
    });
    await h.service.start();
    await h.clock.advance(0);
    const tools = h.service.tools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'pollers_list',
      'pollers_pause',
      'pollers_reset',
      'pollers_resume',
      'pollers_run',
      'pollers_show',
    ]);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const ctx = { agentId: 'assistant', logger: h.logger, signal: new AbortController().signal };
    const list = (await byName.pollers_list!.handler({}, ctx)) as { id: string }[];
    expect(list.map((j) => j.id)).toEqual(['j1', 'j2']);
    await expect(byName.pollers_show!.handler({ id: 'j2' }, ctx)).resolves.toMatchObject({ id: 'j2' });
    await expect(byName.pollers_show!.handler({ id: 'nope' }, ctx)).rejects.toMatchObject({
      code: 'POLLER_UNKNOWN_JOB',
    });
    await expect(byName.pollers_pause!.handler({ id: 'j2' }, ctx)).rejects.toMatchObject({
      code: 'POLLER_UNKNOWN_JOB',
    });
    expect((await byName.pollers_show!.handler({ id: 'j2' }, ctx)) as { paused: boolean }).toMatchObject({
      paused: false,
    });
    await expect(byName.pollers_reset!.handler({ id: 'j1' }, ctx)).rejects.toMatchObject({
      code: 'POLLER_CONFIRM_REQUIRED',
    });
    await expect(byName.pollers_reset!.handler({ id: 'j1', confirm: true }, ctx)).resolves.toMatchObject({
      id: 'j1',
    });
    expect(
      h.logger.records.some(
        (r) => r.msg === 'poller tool call' && r.fields.agent_id === 'assistant' && r.fields.job_id === 'j1',
      ),
    ).toBe(true);
  });

  it('binds kind tools to the calling agent shared resource; one shared per (agent, kind), rebuilt on credentials reload', async () => {
    let created = 0;
    let closed = 0;
    const k = scriptedKind('fake', {
      credentials: 'mail',
      createShared: ({ agentId, account }) => ({
        agentId,
        account: account?.name,
        n: ++created,
        close: () => void closed++,
      }),
      tools: [
        {
          name: 'fake_whoami',
          description: 'who',
          parameters: { type: 'object' },
          handler: async (_a, ctx) => ctx.shared,
        },
      ],
    });
    k.setDefault(async (ctx: TickContext) => ({ items: [], cursor: (ctx.shared as { n: number }).n }));
    const h = setup({
      kinds: [k],
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { client_id: 'x' } } },
      jobs: [job('j1'), job('j2')],
    });
    await h.service.start();
    await h.clock.advance(0);
    expect(created).toBe(1);
    const tool = h.service.tools().find((t) => t.name === 'fake_whoami')!;
    const ctx = { agentId: 'assistant', logger: h.logger, signal: new AbortController().signal };
    expect(await tool.handler({}, ctx)).toMatchObject({ agentId: 'assistant', account: 'work', n: 1 });
    await h.service.reloadCredentials(h.snapshot);
    expect(closed).toBe(1);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 2 });
    await expect(tool.handler({}, { ...ctx, agentId: 'nobody' })).rejects.toMatchObject({
      code: 'POLLER_NO_CREDENTIALS',
    });
    // A config reload that leaves the account alone keeps the client; a rotated secret rebuilds it.
    const same = createTestSnapshot({
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { client_id: 'x' } } },
      jobs: [job('j1'), job('j2')],
      version: 2,
    });
    await h.service.reload(same);
    expect(closed).toBe(1);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 2 });
    const rotated = createTestSnapshot({
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { client_id: 'x', refresh_token: 'rotated' } } },
      jobs: [job('j1'), job('j2')],
      version: 3,
    });
    await h.service.reload(rotated);
    expect(closed).toBe(2);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 3 });
  });
});
