/** The `calendar` kind over CalDAV against a real Radicale, inside the real poller service (SQLite state). */
import type { TestJobSpec } from '@agent/poller-runtime/testing';
import { calendarJob } from './helpers.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { calendarPollerKind } from '../src/index.js';
import { startRadicale, type RadicaleServer } from '../src/testing.js';
import { serviceHarness } from './service-harness.js';

const MIN = 60_000;
let server: RadicaleServer;
beforeAll(async () => {
  server = await startRadicale();
});
afterAll(async () => {
  await server?.stop();
});

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

let n = 0;
const ev = (uid: string, lines: string[]) =>
  [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//test//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    `DTSTAMP:20260301T0900${String(n++ % 60).padStart(2, '0')}Z`,
    ...lines,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');

/** Jobs of this file render every field the test checks. */
const job = (id: string, config: Record<string, unknown> = {}, extra: Partial<TestJobSpec> = {}) =>
  calendarJob(
    id,
    { message_template: '{change}: {summary} at {start} next {next} <{html_link}>', ...config },
    extra,
  );

async function setup(jobs: TestJobSpec[], account: Record<string, unknown> = {}) {
  const h = serviceHarness(calendarPollerKind, {
    jobs,
    start: '2026-03-10T12:00:00Z',
    agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { calendar: 'home' } } },
    accounts: {
      calendar: {
        home: {
          provider: 'caldav',
          url: server.calendarUrl,
          user: server.user,
          password: server.password,
          allow_private_networks: true,
          ...account,
        },
      },
    },
    secrets: [server.password],
  });
  cleanup.push(() => h.close());
  await h.service.start();
  return h;
}

describe('calendar over CalDAV (Radicale)', () => {
  it('baselines, then delivers created, updated and deleted events once each', async () => {
    expect(await server.put('base', ev('base', ['SUMMARY:before', 'DTSTART:20260301T100000Z']))).toBe(201);
    const h = await setup([job('c', { skip_cancelled: false })]);
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual([]);
    await server.put(
      'e1',
      ev('e1', ['SUMMARY:Planning', 'DTSTART;TZID=Europe/Madrid:20260305T100000', 'RRULE:FREQ=WEEKLY']),
    );
    await server.put('e2', ev('e2', ['SUMMARY:Holiday', 'DTSTART;VALUE=DATE:20260320']));
    await h.advance(MIN);
    const url = server.calendarUrl;
    expect(h.dispatcher.texts().toSorted()).toEqual([
      `updated: Holiday at 2026-03-20 (all day) next  <${url}e2.ics>`,
      `updated: Planning at 2026-03-05 10:00 Europe/Madrid next 2026-03-12 10:00 Europe/Madrid <${url}e1.ics>`,
    ]);
    await server.put('e1', ev('e1', ['SUMMARY:Planning v2', 'DTSTART:20260305T100000Z']));
    expect(await server.remove('base')).toBe(200);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts().slice(2)).toEqual([
      `updated: Planning v2 at 2026-03-05 10:00 UTC next  <${url}e1.ics>`,
      `cancelled:  at  next  <${url}base.ics>`,
    ]);
    expect((await h.service.show('c')).last_status).toBe('ok');
  });

  it('skip_cancelled drops deletions and STATUS:CANCELLED', async () => {
    const h = await setup([job('c')]);
    await h.advance(0);
    await server.put('x1', ev('x1', ['SUMMARY:off', 'STATUS:CANCELLED', 'DTSTART:20260301T100000Z']));
    await server.put('x2', ev('x2', ['SUMMARY:on', 'DTSTART:20260301T100000Z']));
    await server.remove('e2');
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual([
      `updated: on at 2026-03-01 10:00 UTC next  <${server.calendarUrl}x2.ics>`,
    ]);
  });

  it('an invalid sync token (403 valid-sync-token) pauses and alerts once; reset re-baselines', async () => {
    const h = await setup([job('c', {}, { failure_to: { channel: 'chat_b', to: 'ops' } })]);
    await h.advance(0);
    await server.put('t1', ev('t1', ['SUMMARY:t1', 'DTSTART:20260301T100000Z']));
    server.forgetSyncTokens();
    await h.advance(MIN);
    const st = await h.service.show('c');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/no longer accepts the sync token \(403\).*reset <job> --yes/);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts('chat_b')).toHaveLength(1);
    await h.service.reset('c');
    await h.service.resume('c');
    await h.advance(MIN);
    // A new baseline: nothing delivered, the job is healthy again, and later changes are delivered.
    expect(h.dispatcher.texts('chat_a')).toEqual([]);
    expect(await h.service.show('c')).toMatchObject({ paused: false, last_status: 'ok' });
    await server.put('t2', ev('t2', ['SUMMARY:t2', 'DTSTART:20260301T100000Z']));
    await h.advance(MIN);
    expect(h.dispatcher.texts('chat_a')).toHaveLength(1);
  });

  it('a wrong password is Permanent; a loopback URL without allow_private_networks is refused', async () => {
    const h = await setup([job('c')], { password: 'nope' });
    await h.advance(0);
    const st = await h.service.show('c');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/authentication failed \(401\)/);
    const h2 = await setup([job('c2')], { allow_private_networks: false });
    await h2.advance(0);
    expect(await h2.service.show('c2')).toMatchObject({ paused: true, last_status: 'permanent' });
  });
});
