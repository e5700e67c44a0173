/**
 * RFC 6578 answers Radicale does not give on its own, through a loopback proxy in front of it: a truncated
 * sync (a 507 for the collection and a continuation token) and 410 Gone, inside the real poller service.
 */
import type { ServiceHarness } from '@agent/poller-runtime/testing';
import { describe, expect, it } from 'vitest';
import { icsEvent } from '../src/testing.js';
import { calendarJob } from './helpers.js';
import { radicaleSuite } from './radicale-suite.js';
import { startSyncProxy } from './sync-proxy.js';

const MIN = 60_000;
const suite = radicaleSuite();

const ev = (uid: string) => icsEvent({ uid, summary: uid, start: '20260305T100000Z' });

const cursorOf = async (h: ServiceHarness) =>
  ((await h.store.load('c'))?.cursor ?? null) as { sync_token: string } | null;

describe('CalDAV sync answers of RFC 6578 (Radicale behind a proxy)', () => {
  it('a truncated sync continues with the token it gave; 410 Gone pauses the job (Permanent)', async () => {
    const cal = await suite.server.calendar('truncated');
    const proxy = await startSyncProxy(new URL(cal.calendarUrl).origin);
    suite.defer(() => proxy.close());
    const h = await suite.service(
      [
        calendarJob(
          'c',
          { skip_cancelled: false, message_template: '{change}: {summary}' },
          { failure_to: { channel: 'chat_b', to: 'ops' } },
        ),
      ],
      { url: `${proxy.origin}${new URL(cal.calendarUrl).pathname}` },
    );

    await cal.put('seed', ev('seed'));
    await h.advance(0);
    const baseline = (await cursorOf(h))!.sync_token;
    expect(proxy.syncTokens()).toEqual(['']);

    for (const uid of ['e1', 'e2', 'e3', 'e4', 'e5']) await cal.put(uid, ev(uid));
    await cal.remove('seed');
    proxy.truncateNext(2);
    await h.advance(MIN);
    const [continuation] = proxy.issued();
    expect(continuation).toBeDefined();
    // The second REPORT of the tick carries the token of the truncated answer, not the stored one.
    expect(proxy.syncTokens()).toEqual(['', baseline, continuation]);
    expect(h.dispatcher.texts().toSorted()).toEqual([
      'cancelled: ',
      'created: e1',
      'created: e2',
      'created: e3',
      'created: e4',
      'created: e5',
    ]);
    // The cursor is the server's token after the rest, never the continuation token.
    const after = (await cursorOf(h))!.sync_token;
    expect(after).not.toBe(continuation);
    expect(after).not.toBe(baseline);
    await h.advance(MIN);
    expect(proxy.syncTokens().slice(3)).toEqual([after]);
    expect(h.dispatcher.texts()).toHaveLength(6);

    proxy.gone();
    await cal.put('e6', ev('e6'));
    await h.advance(MIN);
    const st = await h.service.show('c');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/no longer accepts the sync token \(410\).*reset <job> --yes/);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts('chat_b')).toHaveLength(1);
    expect(h.dispatcher.texts('chat_a')).toHaveLength(6);
  });
});
