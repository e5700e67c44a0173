// The rss kind inside the real poller service: baseline, delivery order, carry-over, reset, restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStateStore } from '@agent/poller-runtime/sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { entries, harness, job, rss, startServer, type FeedEntry, type TestServer } from '../test/helpers.js';
import { rssPollerKind } from './index.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

/** A feed server whose content and validators the test changes between ticks. */
async function feed(initial: FeedEntry[], etag?: string) {
  const state = { entries: initial, etag };
  const server: TestServer = await startServer((req, res) => {
    if (state.etag !== undefined && req.headers['if-none-match'] === state.etag) {
      res.writeHead(304, { etag: state.etag });
      res.end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/rss+xml; charset=utf-8',
      ...(state.etag !== undefined ? { etag: state.etag } : {}),
    });
    res.end(rss(state.entries));
  });
  cleanup.push(() => server.close());
  return { server, state };
}

function rssJob(url: string, extra: Record<string, unknown> = {}) {
  return job('news', 'rss', {
    feed_url: url,
    message_template: '{title} <{link}>',
    allow_private_networks: true,
    ...extra,
  });
}

async function started(opts: Parameters<typeof harness>[0]) {
  const h = harness(opts);
  cleanup.push(() => h.service.stop());
  await h.service.start();
  return h;
}

describe('rss through the poller service', () => {
  it('the first tick records a baseline; later ticks deliver only new items, oldest first', async () => {
    const f = await feed(entries(1, 2, 3));
    const h = await started({ kind: rssPollerKind, jobs: [rssJob(`${f.server.url}/feed`)] });
    expect(h.service.rejected()).toEqual([]);

    expect(await h.service.run('news')).toMatchObject({ status: 'ok', items_dispatched: 0 });
    expect(h.dispatcher.deliveries).toHaveLength(0);
    expect((await h.service.show('news')).baselined).toBe(true);

    // Two new posts; the feed lists them newest first and out of date order with the rest.
    f.state.entries = [...entries(5), ...entries(1, 2, 3), ...entries(4)];
    expect(await h.service.run('news')).toMatchObject({ status: 'ok', items_dispatched: 2 });
    expect(h.dispatcher.texts()).toEqual([
      'Post 4 <https://example.org/p/4>',
      'Post 5 <https://example.org/p/5>',
    ]);
    await h.service.run('news');
    expect(h.dispatcher.deliveries).toHaveLength(2);
  });

  it('a 304 tick is ok and delivers nothing', async () => {
    const f = await feed(entries(1), '"v1"');
    const h = await started({ kind: rssPollerKind, jobs: [rssJob(`${f.server.url}/feed`)] });
    await h.service.run('news');
    expect(await h.service.run('news')).toEqual({ status: 'ok', items_seen: 0, items_dispatched: 0 });
    expect(f.server.requests[1]!.headers['if-none-match']).toBe('"v1"');
    expect((await h.store.load('news'))!.cursor).toEqual({ etag: '"v1"' });
  });

  it('max_per_tick carries items over, and the ETag is stored only once they are all delivered', async () => {
    const f = await feed(entries(1));
    const h = await started({
      kind: rssPollerKind,
      jobs: [rssJob(`${f.server.url}/feed`, { max_per_tick: 2 })],
    });
    await h.service.run('news'); // baseline, no validators
    f.state.entries = entries(1, 2, 3, 4, 5, 6);
    f.state.etag = '"v2"';

    await h.service.run('news');
    expect(h.dispatcher.texts()).toHaveLength(2);
    expect((await h.store.load('news'))!.cursor).toEqual({});
    await h.service.run('news');
    // The carry-over tick is not conditional: the new ETag was not stored while items waited.
    expect(f.server.requests[2]!.headers['if-none-match']).toBeUndefined();
    expect(h.dispatcher.texts()).toHaveLength(4);
    await h.service.run('news');
    expect(h.dispatcher.texts().map((t) => t.split(' <')[0])).toEqual([
      'Post 2',
      'Post 3',
      'Post 4',
      'Post 5',
      'Post 6',
    ]);
    expect((await h.store.load('news'))!.cursor).toEqual({ etag: '"v2"' });
    await h.service.run('news');
    expect(f.server.requests[4]!.headers['if-none-match']).toBe('"v2"');
    expect(h.dispatcher.texts()).toHaveLength(5);
  });

  it('reset clears the validators and records a new baseline', async () => {
    const f = await feed(entries(1), '"v1"');
    const h = await started({ kind: rssPollerKind, jobs: [rssJob(`${f.server.url}/feed`)] });
    await h.service.run('news');
    f.state.entries = entries(1, 2);
    f.state.etag = '"v2"';
    await h.service.run('news');
    expect(h.dispatcher.texts()).toHaveLength(1);

    await h.service.reset('news');
    f.state.entries = entries(1, 2, 3);
    f.state.etag = '"v3"';
    expect(await h.service.run('news')).toMatchObject({ status: 'ok', items_dispatched: 0 });
    expect(f.server.requests[2]!.headers['if-none-match']).toBeUndefined();
    expect(h.dispatcher.texts()).toHaveLength(1);
    f.state.entries = entries(1, 2, 3, 4);
    f.state.etag = '"v4"';
    await h.service.run('news');
    expect(h.dispatcher.texts()).toEqual([
      'Post 2 <https://example.org/p/2>',
      'Post 4 <https://example.org/p/4>',
    ]);
  });

  it('a new service on the same sqlite file delivers nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rss-state-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'poller.db');
    const f = await feed(entries(1, 2));

    const store1 = createSqliteStateStore(file);
    const h1 = harness({ kind: rssPollerKind, jobs: [rssJob(`${f.server.url}/feed`)], store: store1 });
    await h1.service.start();
    await h1.service.run('news');
    f.state.entries = entries(1, 2, 3);
    await h1.service.run('news');
    expect(h1.dispatcher.texts()).toEqual(['Post 3 <https://example.org/p/3>']);
    await h1.service.stop();
    await store1.close();

    const store2 = createSqliteStateStore(file);
    cleanup.push(() => store2.close());
    const h2 = await started({ kind: rssPollerKind, jobs: [rssJob(`${f.server.url}/feed`)], store: store2 });
    expect(await h2.service.run('news')).toMatchObject({ status: 'ok', items_dispatched: 0 });
    f.state.entries = entries(1, 2, 3, 4);
    await h2.service.run('news');
    expect(h2.dispatcher.texts()).toEqual(['Post 4 <https://example.org/p/4>']);
  });

  it('a 429 with Retry-After moves the next scheduled tick at least that far', async () => {
    let limited = false;
    const server = await startServer((_req, res) => {
      if (limited) {
        res.writeHead(429, { 'retry-after': '120' });
        res.end();
        return;
      }
      res.writeHead(200);
      res.end(rss(entries(1)));
    });
    cleanup.push(() => server.close());
    const h = await started({ kind: rssPollerKind, jobs: [rssJob(`${server.url}/feed`)] });
    await h.clock.advance(0);
    await h.service.idle();
    expect(server.requests).toHaveLength(1);
    limited = true;
    // To the job's next slot (every_secs grids have a per-job phase).
    await h.clock.advance((await h.store.load('news'))!.nextRunAt! - h.clock.now());
    await h.service.idle();
    const st = (await h.store.load('news'))!;
    expect(st.lastStatus).toBe('transient');
    expect(st.nextRunAt! - h.clock.now()).toBeGreaterThanOrEqual(120_000);
  });

  it('a 404 pauses the job and alerts with a reason that has no query string', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(404);
      res.end();
    });
    cleanup.push(() => server.close());
    const h = await started({
      kind: rssPollerKind,
      jobs: [rssJob(`${server.url}/feed?token=t0ps3cret`)],
    });
    expect(await h.service.run('news')).toMatchObject({ status: 'permanent' });
    const detail = await h.service.show('news');
    expect(detail.paused).toBe(true);
    expect(detail.last_error).toContain('answered 404');
    const alert = h.dispatcher.deliveries.find((d) => d.channel === 'chat_b');
    expect(alert?.text).toContain('[permanent]');
    expect(alert?.text).not.toContain('t0ps3cret');
  });

  it('a job with an unknown placeholder or a literal loopback host is rejected at validation', async () => {
    const h = await started({
      kind: rssPollerKind,
      jobs: [
        { ...rssJob('https://example.org/feed'), id: 'bad_tpl' },
        { ...rssJob('http://127.0.0.1:9/feed', { allow_private_networks: false }), id: 'private' },
      ].map((j, i) =>
        i === 0 ? { ...j, config: { ...j.config, message_template: '{title} {content}' } } : j,
      ),
    });
    const rejected = h.service.rejected();
    expect(rejected.map((r) => r.id).sort()).toEqual(['bad_tpl', 'private']);
    const messages = rejected.flatMap((r) => r.issues.map((i) => i.message)).join('\n');
    expect(messages).toContain('unknown placeholder "{content}"; valid placeholders: {title}, {link}');
    expect(messages).toContain('private or loopback address');
  });
});
