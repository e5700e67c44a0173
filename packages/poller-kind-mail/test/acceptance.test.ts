/**
 * The mail acceptance behaviours, one table run against each provider: the Gmail API (loopback fake) and
 * IMAP (a real Dovecot), each inside the real poller service with its SQLite store. Every case makes its
 * own mailbox and messages, so any one of them runs alone (`-t`).
 */
import type { ServiceHarness, TestJobSpec } from '@agent/poller-runtime/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mailPollerKind } from '../src/index.js';
import { mailProviders, type CaseMailbox } from './acceptance-providers.js';
import { countUnreadTool, mailJob } from './helpers.js';
import { serviceHarness } from './service-harness.js';

const START = Date.parse('2026-03-01T12:00:00Z');
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe.each(mailProviders)('mail acceptance over $name', (provider) => {
  beforeAll(() => provider.start());
  afterAll(() => provider.stop());

  let cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.toReversed()) await c();
    cleanup = [];
  });

  /** A mailbox of the case's own and the poller service around `jobs`; the clock starts at `start`. */
  async function setup(jobs: TestJobSpec[], start = START): Promise<{ h: ServiceHarness; box: CaseMailbox }> {
    let h: ServiceHarness | undefined;
    const box = await provider.mailbox(() => h?.clock.now() ?? start);
    cleanup.push(() => box.close());
    h = serviceHarness(mailPollerKind, {
      jobs,
      start: new Date(start).toISOString(),
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: box.account } },
      secrets: box.secrets,
    });
    const harness = h;
    cleanup.push(() => harness.close());
    await h.service.start();
    return { h, box };
  }

  it('back-fills within newer_than on the first tick, oldest first, max_per_tick with carry-over', async () => {
    const { h, box } = await setup([mailJob('m', { max_per_tick: 2 })]);
    const at = (i: number) => START - (10 - i) * HOUR;
    // Added out of order: delivery follows the receipt time.
    await box.add(
      { key: 'old', at: START - 3 * DAY, subject: 'outside the window' },
      { key: 'm3', at: at(3), subject: 's3' },
      { key: 'm1', at: at(1), subject: 's1' },
      { key: 'd', at: at(2), subject: 'a draft', draft: true },
      { key: 'm5', at: at(5), subject: 's5' },
      { key: 'm2', at: at(2), subject: 's2' },
      { key: 'm4', at: at(4), subject: 's4' },
    );
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual(['s1 from orders@shop.example', 's2 from orders@shop.example']);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(
      ['s1', 's2', 's3', 's4', 's5'].map((s) => `${s} from orders@shop.example`),
    );
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(5);
    expect((await h.service.show('m')).last_status).toBe('ok');
  });

  it('marks a message read only after its delivery was accepted; a failed delivery leaves it unread', async () => {
    const { h, box } = await setup([mailJob('m')]);
    await box.add({ key: 'a', at: START - HOUR, subject: 'hello' });
    h.dispatcher.failWhen(() => true);
    await h.advance(0);
    expect(h.dispatcher.attempts()).toBe(1);
    expect(h.dispatcher.texts()).toEqual([]);
    expect(await box.unread('a')).toBe(true);
    expect((await h.service.show('m')).last_status).toBe('transient');
    h.dispatcher.failWhen(null);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['hello from orders@shop.example']);
    expect(await box.unread('a')).toBe(false);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(1);
  });

  it('mark_read_on_dispatch: false delivers each message once and leaves it unread', async () => {
    const { h, box } = await setup([mailJob('m', { mark_read_on_dispatch: false })]);
    await box.add({ key: 'a', at: START - HOUR, subject: 'hello' });
    await h.advance(0);
    await h.advance(MIN);
    await box.add({ key: 'b', at: h.clock.now() - 1000, subject: 'later' });
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual([
      'hello from orders@shop.example',
      'later from orders@shop.example',
    ]);
    expect([await box.unread('a'), await box.unread('b')]).toEqual([true, true]);
  });

  it('is:unread leaves out mail read before the tick; without it, read mail is delivered once', async () => {
    const { h, box } = await setup([
      mailJob('unread', { message_template: 'unread: {subject}' }),
      mailJob('all', { query: 'from:shop.example', message_template: 'all: {subject}' }),
    ]);
    await box.add(
      { key: 'r', at: START - 2 * HOUR, subject: 'read already', read: true },
      { key: 'n', at: START - HOUR, subject: 'new' },
    );
    await h.advance(0);
    await h.advance(MIN);
    expect(h.dispatcher.texts().toSorted()).toEqual(['all: new', 'all: read already', 'unread: new']);
  });

  it('sender_allowlist matches the address of From, never a display name or a look-alike domain', async () => {
    const { h, box } = await setup([mailJob('m', { sender_allowlist: ['boss@corp.com', 'corp.com'] })]);
    await box.add(
      { key: 's1', at: START - 3 * HOUR, subject: 'spoof1', from: '"boss@corp.com" <evil@x.com>' },
      { key: 's2', at: START - 2 * HOUR, subject: 'spoof2', from: 'boss@corp.com <evil@corp.com.evil>' },
      { key: 's3', at: START - 2 * HOUR, subject: 'spoof3', from: 'x@evil-corp.com (boss@corp.com)' },
      { key: 'ok', at: START - HOUR, subject: 'real', from: 'The Boss <BOSS@corp.com>' },
      { key: 'sub', at: START - HOUR / 2, subject: 'sub', from: 'ops@eu.corp.com' },
    );
    await h.advance(0);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['real from boss@corp.com', 'sub from ops@eu.corp.com']);
  });

  it('extract fills placeholders; require_fields drops mail without them, inside the tick', async () => {
    const { h, box } = await setup([
      mailJob('m', {
        max_per_tick: 1,
        extract: { tracking: 'Tracking: (\\w+)', order: '(?i)order no\\. (\\d+)' },
        require_fields: ['tracking'],
        message_template: '{subject}: {tracking} [{order}]',
      }),
    ]);
    await box.add(
      { key: 'none', at: START - 4 * HOUR, subject: 'no tracking', text: 'Order No. 11 is late' },
      { key: 'a', at: START - 3 * HOUR, subject: 'shipped', text: 'ORDER NO. 12\nTracking: ZX9' },
      { key: 'b', at: START - 2 * HOUR, subject: 'shipped too', text: 'Tracking: QQ1' },
    );
    // The oldest mail has no tracking number: it takes no slot of max_per_tick.
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual(['shipped: ZX9 [12]']);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['shipped: ZX9 [12]', 'shipped too: QQ1 []']);
  });

  it('mail_count_unread counts matching unread mail and changes nothing', async () => {
    // The tool has no job clock: windows count from the real time, so the case starts now.
    const now = Date.now();
    const { h, box } = await setup([mailJob('m', { query: 'from:nobody.example' })], now);
    await box.add(
      { key: 'a', at: now - HOUR, from: 'x@shop.example' },
      { key: 'b', at: now - 2 * HOUR, from: 'y@shop.example' },
      { key: 'c', at: now - 2 * HOUR, from: 'y@shop.example', read: true },
      { key: 'd', at: now - 20 * DAY, from: 'z@shop.example' },
      { key: 'e', at: now - HOUR, from: 'w@other.example' },
    );
    await h.advance(0);
    const before = await h.service.show('m');
    const count = countUnreadTool(h);
    expect(await count({ query: 'from:shop.example' })).toEqual({
      query: 'is:unread from:shop.example',
      count: 3,
      exact: true,
    });
    expect(await count({ query: 'from:shop.example', newer_than: '7d' })).toEqual({
      query: 'is:unread from:shop.example newer_than:7d',
      count: 2,
      exact: true,
    });
    expect(await count({})).toMatchObject({ query: 'is:unread', count: 4 });
    await expect(count({ newer_than: 'soon' })).rejects.toThrow(/newer_than/);
    const unread = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((k) => box.unread(k)));
    expect(unread).toEqual([true, true, false, true, true]);
    expect(h.dispatcher.deliveries).toHaveLength(0);
    expect(await h.service.show('m')).toEqual(before);
  });
});
