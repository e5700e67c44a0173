import { runKindTick, testPollerKind } from '@agent/poller-core/testing';
import { renderTemplate, type JsonValue } from '@agent/poller-core';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedFor, startCalendarFixture, type CalendarFixture } from '../test/helpers.js';
import { calendarPollerKind, type CalendarShared } from './kind.js';

let fixtures: CalendarFixture[] = [];
let current: CalendarFixture | null = null;
let now = Date.parse('2026-03-01T12:00:00Z');
afterEach(async () => {
  for (const f of fixtures) await f.close();
  fixtures = [];
});

async function fixture(): Promise<CalendarFixture> {
  const f = await startCalendarFixture(() => now);
  fixtures.push(f);
  current = f;
  return f;
}

// The suite takes one account for every scenario; it follows the fixture started last.
const account = {
  name: 'work',
  get config() {
    return current?.accountBlock ?? { client_id: 'c', client_secret: 's', refresh_token: 'r' };
  },
};

const base = { deliver: { channel: 'chat_a', to: 'u1' }, message_template: '{summary} {start} {html_link}' };

testPollerKind(calendarPollerKind, {
  validConfigs: [
    base,
    {
      ...base,
      calendar_id: 'team@group.calendar.example',
      skip_cancelled: false,
      single_events: true,
      max_per_tick: 10,
      message_template: '{change} {status} {summary} {start} {end} {id} {location} {updated}',
    },
  ],
  invalidConfigs: [
    {},
    { ...base, calendar_id: '' },
    { ...base, skip_cancelled: 'no' },
    { ...base, message_template: '{title}' },
    { ...base, max_per_tick: 0 },
    { ...base, extra: true },
  ],
  account,
  scenarios: {
    ok: async () => {
      const f = await fixture();
      f.cal.put({ id: 'a', summary: 'A' }, { id: 'b', summary: 'B' });
      return { config: f.config() };
    },
    transient: async () => {
      const f = await fixture();
      f.cal.fail(403, 'rateLimitExceeded', Infinity);
      return { config: f.config() };
    },
    permanent: async () => {
      const f = await fixture();
      return { config: f.config({ calendar_id: 'nope' }) };
    },
    hang: async () => {
      const f = await fixture();
      f.cal.hang();
      return { config: f.config() };
    },
  },
});

async function tick(
  f: CalendarFixture,
  cursor: JsonValue | null,
  over: Record<string, unknown> = {},
  shared?: CalendarShared,
) {
  return runKindTick(calendarPollerKind, f.config(over), {
    account: f.account,
    cursor,
    ...(shared ? { shared } : {}),
  });
}

describe('calendar sync', () => {
  it('first sync pages through every page and takes nextSyncToken from the last page', async () => {
    const f = await fixture();
    for (let i = 0; i < 600; i++) f.cal.put({ id: `e${String(i).padStart(3, '0')}`, summary: `E${i}` });
    const r = await tick(f, null);
    expect(f.cal.requests).toHaveLength(3);
    expect(f.cal.requests.map((q) => q.params.pageToken)).toEqual([undefined, '250.600', '500.600']);
    expect(
      f.cal.requests.every((q) => q.params.syncToken === undefined && q.params.maxResults === '250'),
    ).toBe(true);
    expect(r.items).toHaveLength(600);
    expect(r.cursor).toEqual({ sync_token: 'sync-600' });
    // Oldest change first although the API lists in another order.
    expect(r.items[0]!.id).toMatch(/^e000@/);
  });

  it('later syncs send only syncToken (no forbidden parameters), return changes, creations and cancellations', async () => {
    const f = await fixture();
    f.cal.put(
      { id: 'keep', summary: 'Keep' },
      { id: 'move', summary: 'Move' },
      { id: 'gone', summary: 'Gone' },
    );
    const first = await tick(f, null);
    now += 3_600_000;
    f.cal.put({ id: 'move', summary: 'Moved', start: { date: '2026-04-01' } });
    f.cal.put({
      id: 'new',
      summary: 'Nuevo 📅',
      start: { dateTime: '2026-03-10T09:30:00Z', timeZone: 'America/New_York' },
    });
    f.cal.remove('gone');
    const r = await tick(f, first.cursor!, { skip_cancelled: false });
    const req = f.cal.requests.at(-1)!;
    expect(Object.keys(req.params).sort()).toEqual(['maxResults', 'syncToken']);
    expect(r.items.map((i) => renderTemplate('{change}|{summary}|{start}|{status}', i.fields))).toEqual([
      'updated|Moved|2026-04-01 (all day)|confirmed',
      'created|Nuevo 📅|2026-03-10 05:30 America/New_York|confirmed',
      'cancelled|||cancelled',
    ]);
    expect(new Set([...first.items, ...r.items].map((i) => i.id)).size).toBe(
      first.items.length + r.items.length,
    );
  });

  it('skip_cancelled drops cancelled events; single_events is sent on every request', async () => {
    const f = await fixture();
    f.cal.put({ id: 'a', summary: 'A' });
    const first = await tick(f, null, { single_events: true });
    f.cal.remove('a');
    const r = await tick(f, first.cursor!, { single_events: true });
    expect(r.items).toEqual([]);
    expect(f.cal.requests.every((q) => q.params.singleEvents === 'true')).toBe(true);
    expect(r.cursor).not.toEqual(first.cursor);
  });

  it('an unreadable cursor is Permanent instead of a full listing', async () => {
    const f = await fixture();
    await expect(tick(f, 'not-a-cursor')).rejects.toMatchObject({ code: 'POLLER_PERMANENT' });
    expect(f.cal.requests).toHaveLength(0);
  });
});

describe('calendar errors', () => {
  it.each([
    [410, 'fullSyncRequired', 'POLLER_PERMANENT', /reset/],
    [403, 'rateLimitExceeded', 'POLLER_TRANSIENT', /retrying/],
    [403, 'userRateLimitExceeded', 'POLLER_TRANSIENT', /retrying/],
    [429, 'rateLimitExceeded', 'POLLER_TRANSIENT', /retrying/],
    [503, 'backendError', 'POLLER_TRANSIENT', /retrying/],
    [403, 'forbiddenForNonOrganizer', 'POLLER_PERMANENT', /may read this calendar/],
    [404, 'notFound', 'POLLER_PERMANENT', /calendar_id/],
  ])('%i %s -> %s', async (status, reason, code, hint) => {
    const f = await fixture();
    f.cal.fail(status, reason, Infinity, '12');
    const err = (await tick(f, null).catch((e: unknown) => e)) as {
      code: string;
      message: string;
      retryAfterMs?: number;
    };
    expect(err.code).toBe(code);
    expect(err.message).toMatch(hint);
    expect(err.message).toContain(`(${reason})`);
    if (code === 'POLLER_TRANSIENT') expect(err.retryAfterMs).toBe(12_000);
  });

  it('an expired sync token is 410 -> Permanent', async () => {
    const f = await fixture();
    f.cal.put({ id: 'a' });
    const first = await tick(f, null);
    f.cal.expireSyncTokens();
    await expect(tick(f, first.cursor!)).rejects.toMatchObject({
      code: 'POLLER_PERMANENT',
      message: expect.stringMatching(/410 \(fullSyncRequired\)/),
    });
  });

  it('401 -> one refresh and retry, then invalid_grant is Permanent', async () => {
    const f = await fixture();
    const shared = await sharedFor(f);
    await tick(f, null, {}, shared);
    f.tokens.expireTokens();
    await tick(f, null, {}, shared);
    expect(f.tokens.requests).toBe(2);
    f.tokens.revoke();
    const err = (await tick(f, null, {}, shared).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('POLLER_PERMANENT');
    expect(err.message).toMatch(/OAUTH2_INVALID_GRANT/);
    shared.close();
  });
});
