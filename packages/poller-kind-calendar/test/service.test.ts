/** The `calendar` kind inside the real poller service: SQLite state, baseline, carry-over, 410 and reset. */
import type { TestJobSpec } from '@agent/poller-runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { calendarPollerKind } from '../src/index.js';
import { calendarJob, startCalendarFixture, type CalendarFixture } from './helpers.js';
import { serviceHarness } from './service-harness.js';

const START = Date.parse('2026-03-01T12:00:00Z');
const MIN = 60_000;

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

async function setup(jobs: TestJobSpec[]) {
  let now = START;
  const f: CalendarFixture = await startCalendarFixture(() => now);
  const h = serviceHarness(calendarPollerKind, {
    jobs,
    agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { calendar: 'work' } } },
    accounts: { calendar: { work: f.accountBlock } },
    secrets: [f.tokens.refreshToken, f.tokens.clientSecret],
  });
  const advance = async (ms: number) => {
    await h.advance(ms);
    now = h.clock.now();
  };
  cleanup.push(
    () => f.close(),
    () => h.close(),
  );
  await h.service.start();
  return { f, h, advance };
}

const cursorOf = async (h: ReturnType<typeof serviceHarness>, id: string) => (await h.store.load(id))!.cursor;

describe('calendar jobs in the poller service', () => {
  it('the first tick records a baseline and delivers nothing; then each change once, updates again', async () => {
    const { f, h, advance } = await setup([calendarJob('c')]);
    f.cal.put({ id: 'a', summary: 'Standup' }, { id: 'b', summary: 'Review' });
    await advance(0);
    expect(h.dispatcher.deliveries).toHaveLength(0);
    expect(await cursorOf(h, 'c')).toEqual({ sync_token: 'sync-2' });
    await advance(MIN);
    f.cal.put({ id: 'a', summary: 'Standup (moved)' });
    await advance(MIN);
    await advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['updated: Standup (moved)']);
    f.cal.put({ id: 'a', summary: 'Standup (moved again)' });
    f.cal.remove('b');
    await advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['updated: Standup (moved)', 'updated: Standup (moved again)']);
    expect(await cursorOf(h, 'c')).toEqual({ sync_token: 'sync-5' });
  });

  it('300 changes over 2 pages: each dispatched once and the token of the last page stored', async () => {
    const { f, h, advance } = await setup([calendarJob('c', { max_per_tick: 1000 })]);
    f.cal.put({ id: 'seed' });
    await advance(0);
    const requestsBefore = f.cal.requests.length;
    for (let i = 0; i < 300; i++) f.cal.put({ id: `e${String(i).padStart(3, '0')}`, summary: `E${i}` });
    await advance(MIN);
    const made = f.cal.requests.slice(requestsBefore);
    expect(made).toHaveLength(2);
    expect(made.map((r) => r.params.syncToken)).toEqual(['sync-1', 'sync-1']);
    expect(made[1]!.params.pageToken).toBe('250.301');
    expect(h.dispatcher.texts()).toHaveLength(300);
    expect(new Set(h.dispatcher.deliveries.map((d) => d.itemId)).size).toBe(300);
    expect(h.dispatcher.texts()[0]).toBe('created: E0');
    expect(await cursorOf(h, 'c')).toEqual({ sync_token: 'sync-301' });
    await advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(300);
  });

  it('a per-tick cap carries the rest over: the old sync token is reused until all were delivered', async () => {
    const { f, h, advance } = await setup([calendarJob('c', { max_per_tick: 120 })]);
    f.cal.put({ id: 'seed' });
    await advance(0);
    for (let i = 0; i < 300; i++) f.cal.put({ id: `e${String(i).padStart(3, '0')}`, summary: `E${i}` });
    await advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(120);
    expect(await cursorOf(h, 'c')).toEqual({ sync_token: 'sync-1' });
    await advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(240);
    expect(await cursorOf(h, 'c')).toEqual({ sync_token: 'sync-1' });
    await advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(300);
    expect(new Set(h.dispatcher.deliveries.map((d) => d.itemId)).size).toBe(300);
    expect(await cursorOf(h, 'c')).toEqual({ sync_token: 'sync-301' });
    const syncs = f.cal.requests.filter((r) => r.params.syncToken).map((r) => r.params.syncToken);
    expect(syncs).toEqual(['sync-1', 'sync-1', 'sync-1', 'sync-1', 'sync-1', 'sync-1']);
  });

  it('410 pauses the job and alerts; reset re-baselines without delivering; later changes flow again', async () => {
    const { f, h, advance } = await setup([
      calendarJob('c', {}, { failure_to: { channel: 'chat_b', to: 'ops' } }),
    ]);
    f.cal.put({ id: 'a', summary: 'A' });
    await advance(0);
    f.cal.expireSyncTokens();
    f.cal.put({ id: 'b', summary: 'B' });
    await advance(MIN);
    const st = await h.service.show('c');
    expect(st.paused).toBe(true);
    expect(st.last_status).toBe('permanent');
    expect(h.dispatcher.texts('chat_b')).toHaveLength(1);
    expect(h.dispatcher.texts('chat_b')[0]).toMatch(/kind calendar.*410 \(fullSyncRequired\).*reset/);
    await h.service.reset('c');
    expect(await cursorOf(h, 'c')).toBeNull();
    const before = f.cal.requests.length;
    await h.service.resume('c');
    await advance(MIN);
    const after = f.cal.requests.slice(before);
    expect(after.length).toBeGreaterThan(0);
    expect(after[0]!.params.syncToken).toBeUndefined();
    expect(h.dispatcher.texts('chat_a')).toEqual([]);
    expect(await cursorOf(h, 'c')).toEqual({ sync_token: 'sync-2' });
    f.cal.put({ id: 'c', summary: 'C' });
    await advance(MIN);
    expect(h.dispatcher.texts('chat_a')).toEqual(['created: C']);
  });

  it('two calendar jobs of one agent share one token refresh', async () => {
    const { f, h, advance } = await setup([calendarJob('c1'), calendarJob('c2', { skip_cancelled: false })]);
    await advance(0);
    f.cal.put({ id: 'x', summary: 'X' });
    await advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['created: X', 'created: X']);
    expect(f.tokens.requests).toBe(1);
  });
});
