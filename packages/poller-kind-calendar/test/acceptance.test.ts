/**
 * The calendar acceptance behaviours, one table run against each provider: the Google Calendar API
 * (loopback fake) and CalDAV (a real Radicale), each inside the real poller service with its SQLite store.
 * Every case makes its own calendar and events, so any one of them runs alone (`-t`).
 */
import type { ServiceHarness, TestJobSpec } from '@agent/poller-runtime/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { calendarPollerKind } from '../src/index.js';
import { calendarProviders, type CaseCalendar } from './acceptance-providers.js';
import { calendarJob } from './helpers.js';
import { serviceHarness } from './service-harness.js';

const START = Date.parse('2026-03-01T12:00:00Z');
const MIN = 60_000;
const AT = '2026-03-05 10:00 Europe/Madrid';

/** Jobs of this file render what each case checks. */
const job = (id: string, config: Record<string, unknown> = {}, extra: Partial<TestJobSpec> = {}) =>
  calendarJob(id, { message_template: '{change}: {summary} at {start}', ...config }, extra);

describe.each(calendarProviders)('calendar acceptance over $name', (provider) => {
  beforeAll(() => provider.start());
  afterAll(() => provider.stop());

  let cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.toReversed()) await c();
    cleanup = [];
  });

  async function setup(jobs: TestJobSpec[]): Promise<{ h: ServiceHarness; cal: CaseCalendar }> {
    let h: ServiceHarness | undefined;
    const cal = await provider.calendar(() => h?.clock.now() ?? START);
    cleanup.push(() => cal.close());
    h = serviceHarness(calendarPollerKind, {
      jobs,
      start: new Date(START).toISOString(),
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { calendar: 'work' } } },
      accounts: { calendar: { work: cal.account } },
      secrets: cal.secrets,
    });
    const harness = h;
    cleanup.push(() => harness.close());
    await h.service.start();
    return { h, cal };
  }

  it('the first tick records a baseline; then created, updated and cancelled, each once', async () => {
    const { h, cal } = await setup([job('c', { skip_cancelled: false })]);
    await cal.put({ key: 'a', summary: 'Standup' });
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual([]);
    await cal.put({ key: 'b', summary: 'Review' });
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual([`created: Review at ${AT}`]);
    await cal.put({ key: 'b', summary: 'Review (moved)' });
    await h.advance(MIN);
    expect(h.dispatcher.texts().slice(1)).toEqual([`updated: Review (moved) at ${AT}`]);
    await cal.put({ key: 'a', summary: 'Standup', status: 'cancelled' });
    await cal.remove('b');
    await h.advance(MIN);
    expect(h.dispatcher.texts().slice(2)).toEqual([`cancelled: Standup at ${AT}`, 'cancelled:  at ']);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(4);
    expect((await h.service.show('c')).last_status).toBe('ok');
  });

  it('skip_cancelled (the default) drops cancelled and deleted events', async () => {
    const { h, cal } = await setup([job('c')]);
    await cal.put({ key: 'x0', summary: 'to delete' });
    await h.advance(0);
    await cal.put({ key: 'x1', summary: 'off', status: 'cancelled' });
    await cal.put({ key: 'x2', summary: 'on' });
    await cal.remove('x0');
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual([`created: on at ${AT}`]);
  });

  it('max_per_tick carries the rest over, oldest change first, each change once', async () => {
    const { h, cal } = await setup([job('c', { max_per_tick: 2 })]);
    await h.advance(0);
    await cal.put(...[1, 2, 3, 4, 5].map((i) => ({ key: `e${i}`, summary: `E${i}` })));
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual([`created: E1 at ${AT}`, `created: E2 at ${AT}`]);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual([1, 2, 3, 4, 5].map((i) => `created: E${i} at ${AT}`));
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(5);
  });

  it('an invalid sync token pauses the job (Permanent) and alerts once; reset and resume re-baseline', async () => {
    const { h, cal } = await setup([job('c', {}, { failure_to: { channel: 'chat_b', to: 'ops' } })]);
    await cal.put({ key: 'a', summary: 'A' });
    await h.advance(0);
    cal.invalidateSyncTokens();
    await cal.put({ key: 'b', summary: 'While invalid' });
    await h.advance(MIN);
    const st = await h.service.show('c');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/reset/);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts('chat_b')).toHaveLength(1);
    expect(h.dispatcher.texts('chat_b')[0]).toMatch(/Poller job c \(kind calendar\) was paused/);
    await h.service.reset('c');
    await h.service.resume('c');
    await h.advance(MIN);
    // A new baseline: the change made while the token was refused is not delivered.
    expect(h.dispatcher.texts('chat_a')).toEqual([]);
    expect(await h.service.show('c')).toMatchObject({ paused: false, last_status: 'ok' });
    await cal.put({ key: 'c', summary: 'After reset' });
    await h.advance(MIN);
    expect(h.dispatcher.texts('chat_a')).toEqual([`created: After reset at ${AT}`]);
  });
});
