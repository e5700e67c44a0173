/**
 * The `calendar` kind over CalDAV against a real Radicale, inside the real poller service (SQLite state):
 * what only CalDAV has (iCalendar rendering, the members a cursor remembers, Basic auth). The behaviours
 * both providers share are the table of `acceptance.test.ts`.
 */
import type { TestJobSpec } from '@agent/poller-runtime/testing';
import { runKindTick } from '@agent/poller-core/testing';
import { calendarJob } from './helpers.js';
import { describe, expect, it } from 'vitest';
import { calendarPollerKind } from '../src/index.js';
import { icsEvent, type IcsEventSpec } from '../src/testing.js';
import { radicaleSuite } from './radicale-suite.js';

const MIN = 60_000;
const suite = radicaleSuite();

/** Every version of an event gets a DTSTAMP of its own. */
let n = 0;
const ev = (uid: string, e: Omit<IcsEventSpec, 'uid' | 'stamp'>) =>
  icsEvent({ uid, stamp: `20260301T0900${String(n++ % 60).padStart(2, '0')}Z`, ...e });

/** Jobs of this file render every field the test checks. */
const job = (id: string, config: Record<string, unknown> = {}, extra: Partial<TestJobSpec> = {}) =>
  calendarJob(
    id,
    { message_template: '{change}: {summary} at {start} next {next} <{html_link}>', ...config },
    extra,
  );

describe('calendar over CalDAV (Radicale)', () => {
  it('baselines, then delivers created, updated and deleted events once each; a new member is created without CREATED', async () => {
    const cal = await suite.server.calendar('render');
    expect(await cal.put('base', ev('base', { summary: 'before', start: '20260301T100000Z' }))).toBe(201);
    const h = await suite.service([job('c', { skip_cancelled: false })], { url: cal.calendarUrl });
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual([]);
    await cal.put(
      'e1',
      ev('e1', {
        summary: 'Planning',
        start: 'TZID=Europe/Madrid:20260305T100000',
        lines: ['RRULE:FREQ=WEEKLY'],
      }),
    );
    await cal.put('e2', ev('e2', { summary: 'Holiday', start: 'VALUE=DATE:20260320' }));
    await h.advance(MIN);
    const url = cal.calendarUrl;
    expect(h.dispatcher.texts().toSorted()).toEqual([
      `created: Holiday at 2026-03-20 (all day) next  <${url}e2.ics>`,
      `created: Planning at 2026-03-05 10:00 Europe/Madrid next 2026-03-12 10:00 Europe/Madrid <${url}e1.ics>`,
    ]);
    await cal.put('e1', ev('e1', { summary: 'Planning v2', start: '20260305T100000Z' }));
    expect(await cal.remove('base')).toBe(200);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts().slice(2)).toEqual([
      `updated: Planning v2 at 2026-03-05 10:00 UTC next  <${url}e1.ics>`,
      `cancelled:  at  next  <${url}base.ics>`,
    ]);
    expect((await h.service.show('c')).last_status).toBe('ok');
  });

  it('a cursor without member digests (an older version) falls back to CREATED and LAST-MODIFIED once', async () => {
    const cal = await suite.server.calendar('legacy');
    const account = { name: 'home', config: suite.account({ url: cal.calendarUrl }) };
    const config = {
      deliver: { channel: 'chat_a', to: 'u1' },
      message_template: '{change}',
      skip_cancelled: false,
    };
    await cal.put('old', ev('old', { summary: 'old', start: '20260301T100000Z' }));
    const baseline = await runKindTick(calendarPollerKind, config, { account });
    const cursor = baseline.cursor as { sync_token: string; members: string[] };
    expect(cursor.members).toHaveLength(1);
    await cal.put('n1', ev('n1', { summary: 'n1', start: '20260301T100000Z' }));
    // As an older version stored it: the token alone. Without CREATED the event reads as updated.
    const legacy = await runKindTick(calendarPollerKind, config, {
      account,
      cursor: { sync_token: cursor.sync_token },
    });
    expect(legacy.items.map((i) => (i.fields as Record<string, string>).change)).toEqual(['updated']);
    const next = legacy.cursor as { sync_token: string; members: string[] };
    expect(next.members).toHaveLength(2);
    await cal.put('n2', ev('n2', { summary: 'n2', start: '20260301T100000Z' }));
    await cal.put('old', ev('old', { summary: 'old v2', start: '20260301T100000Z' }));
    const later = await runKindTick(calendarPollerKind, config, { account, cursor: next });
    expect(
      later.items
        .map(
          (i) =>
            `${(i.fields as Record<string, string>).summary}: ${(i.fields as Record<string, string>).change}`,
        )
        .toSorted(),
    ).toEqual(['n2: created', 'old v2: updated']);
    expect((later.cursor as { members: string[] }).members).toHaveLength(3);
  });

  it('a wrong password is Permanent; a loopback URL without allow_private_networks is refused', async () => {
    const h = await suite.service([job('c')], { password: 'nope' });
    await h.advance(0);
    const st = await h.service.show('c');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/authentication failed \(401\)/);
    const h2 = await suite.service([job('c2')], { allow_private_networks: false });
    await h2.advance(0);
    expect(await h2.service.show('c2')).toMatchObject({ paused: true, last_status: 'permanent' });
  });
});
