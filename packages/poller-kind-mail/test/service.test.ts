/**
 * The `mail` kind over the Gmail API inside the real poller service: what only this provider has (one OAuth2
 * client per agent, `batchModify` failures, token and API errors, requests the tool makes). The behaviours
 * both providers share are the table of `acceptance.test.ts`.
 */
import type { TestJobSpec } from '@agent/poller-runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { mailPollerKind } from '../src/index.js';
import { countUnreadTool, mailJob, startMailFixture, type MailFixture } from './helpers.js';
import { serviceHarness } from './service-harness.js';

const START = Date.parse('2026-03-01T12:00:00Z');
const MIN = 60_000;
const HOUR = 3_600_000;

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

async function setup(jobs: TestJobSpec[]) {
  let now = START;
  const f: MailFixture = await startMailFixture(() => now);
  const h = serviceHarness(mailPollerKind, {
    jobs,
    agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
    accounts: { mail: { work: f.accountBlock } },
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

describe('mail jobs in the poller service', () => {
  it('two mail jobs of one agent share one client: one token refresh', async () => {
    const { f, h, advance } = await setup([
      mailJob('a', { query: 'from:a.example' }),
      mailJob('b', { query: 'from:b.example' }),
    ]);
    f.gmail.add(
      { id: 'x', at: START - HOUR, from: 'n@a.example', subject: 'A' },
      { id: 'y', at: START - HOUR, from: 'n@b.example', subject: 'B' },
    );
    await advance(0);
    await advance(MIN);
    expect(h.dispatcher.texts().sort()).toEqual(['A from n@a.example', 'B from n@b.example']);
    expect(f.tokens.requests).toBe(1);
  });

  it('a failing mark-read is logged and never causes a repeat', async () => {
    const { f, h, advance } = await setup([mailJob('m')]);
    f.gmail.add({ id: 'a', at: START - HOUR, subject: 'hello' });
    f.gmail.fail('batchModify', 503, 'backendError', Infinity);
    await advance(0);
    await advance(MIN);
    await advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['hello from someone@example.com']);
    expect(f.gmail.labels('a')).toContain('UNREAD');
    expect(h.logger.find('poller item follow-up failed after delivery')).toHaveLength(1);
    expect((await h.service.show('m')).last_status).toBe('ok');
  });

  it('a revoked refresh token pauses the job and alerts; the secret is in neither', async () => {
    const { f, h, advance } = await setup([
      mailJob('m', {}, { failure_to: { channel: 'chat_b', to: 'ops' } }),
    ]);
    f.tokens.revoke();
    await advance(0);
    const st = await h.service.show('m');
    expect(st.paused).toBe(true);
    expect(st.last_status).toBe('permanent');
    expect(st.last_error).toMatch(/OAUTH2_INVALID_GRANT/);
    const alert = h.dispatcher.texts('chat_b')[0]!;
    expect(alert).toMatch(/Poller job m \(kind mail\) was paused/);
    for (const t of [alert, st.last_error ?? '', JSON.stringify(h.logger.records)])
      expect(t).not.toContain(f.tokens.refreshToken);
  });

  it('a 403 rate limit is Transient: the job stays active and retries', async () => {
    const { f, h, advance } = await setup([mailJob('m')]);
    f.gmail.add({ id: 'a', at: START - HOUR, subject: 'hello' });
    f.gmail.fail('list', 403, 'userRateLimitExceeded');
    await advance(0);
    const st = await h.service.show('m');
    expect(st).toMatchObject({ paused: false, last_status: 'transient', consecutive_errors: 1 });
    await advance(MIN);
    expect(h.dispatcher.texts()).toEqual(['hello from someone@example.com']);
  });

  it('mail_count_unread counts through the agent client with no side effects at all', async () => {
    const { f, h, advance } = await setup([mailJob('m', { query: 'from:nobody.example' })]);
    f.gmail.add(
      { id: 'a', at: START - HOUR, from: 'x@shop.example' },
      { id: 'b', at: START - 2 * HOUR, from: 'y@shop.example' },
      { id: 'c', at: START - 2 * HOUR, from: 'y@shop.example', labels: ['INBOX'] },
      { id: 'd', at: START - 20 * 24 * HOUR, from: 'z@shop.example' },
    );
    await advance(0);
    const before = await h.service.show('m');
    const requestsBefore = f.gmail.requests.length;
    const count = countUnreadTool(h);
    expect(await count({ query: 'from:shop.example' })).toEqual({
      query: 'is:unread from:shop.example',
      count: 3,
      exact: true,
    });
    expect(await count({ query: 'from:shop.example', newer_than: '7d' })).toMatchObject({
      count: 2,
    });
    expect(await count({})).toMatchObject({ query: 'is:unread', count: 3 });
    await expect(count({ newer_than: 'soon' })).rejects.toThrow(/newer_than/);
    const made = f.gmail.requests.slice(requestsBefore);
    expect(made.every((r) => r.route === 'list' && r.method === 'GET')).toBe(true);
    expect(f.gmail.count('batchModify')).toBe(0);
    expect(['a', 'b', 'd'].every((id) => f.gmail.labels(id).includes('UNREAD'))).toBe(true);
    expect(h.dispatcher.deliveries).toHaveLength(0);
    const after = await h.service.show('m');
    expect(after).toEqual(before);
  });
});
