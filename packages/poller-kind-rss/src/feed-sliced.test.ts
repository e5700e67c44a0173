// Large feeds are parsed in slices (items in batches, yields between them); the result is parseFeed's.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, job, memoryLogger, startServer } from '../test/helpers.js';
import { parseFeed, parseFeedAsync } from './feed.js';
import { rssPollerKind } from './index.js';

const TESTDATA = fileURLToPath(new URL('../testdata/', import.meta.url));
const BASE = 'https://example.org/feed.xml';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.(xml|json)$/.test(name) ? [p] : [];
  });
}

function bigRss(n: number, extra = ''): Buffer {
  const parts: string[] = [];
  for (let v = n; v > 0; v--)
    parts.push(
      `<item><guid>post-${v}</guid><title>Post ${v}</title><link>https://example.org/p/${v}</link><pubDate>${new Date(Date.UTC(2026, 0, 1) + v * 60_000).toUTCString()}</pubDate><description>Summary of post ${v}.${extra}</description></item>`,
    );
  return Buffer.from(
    `<?xml version="1.0" encoding="utf-8"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>Big</title><link>https://example.org/</link>${parts.join('')}</channel></rss>`,
  );
}

describe('parseFeedAsync', () => {
  it('gives what parseFeed gives for every file of the corpus, cut into batches of one and two items', async () => {
    const all = files(TESTDATA);
    expect(all.length).toBeGreaterThan(500);
    for (const file of all) {
      const body = readFileSync(file);
      const expected = parseFeed(body, { baseUrl: BASE });
      for (const batchItems of [1, 2])
        expect(await parseFeedAsync(body, { baseUrl: BASE, minSlicedChars: 0, batchItems }), file).toEqual(
          expected,
        );
    }
  });

  it('lets the event loop run while it parses a large feed, with the same result', async () => {
    const body = bigRss(5000);
    let turns = 0;
    let running = true;
    const spin = (): void => {
      turns++;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    const got = await parseFeedAsync(body, { baseUrl: BASE, sliceMs: 1 });
    running = false;
    expect(got.ok && got.feed.items).toHaveLength(5000);
    expect(got).toEqual(parseFeed(body, { baseUrl: BASE }));
    expect(turns).toBeGreaterThan(1);
  });

  it('parses a document its item scan cannot follow whole, with the same result', async () => {
    // An unclosed <br> in a description: the scan gives up, the parser library copes.
    const body = bigRss(300, '<br>');
    const expected = parseFeed(body, { baseUrl: BASE });
    expect(await parseFeedAsync(body, { baseUrl: BASE, minSlicedChars: 0 })).toEqual(expected);
  });

  it('refuses a JSON body nested deeper than 64 levels with FEED_MALFORMED naming the depth', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const body = Buffer.from(
      `{"version":"https://jsonfeed.org/version/1.1","title":"x","items":[{"id":"1","x":${deep}}]}`,
    );
    const got = await parseFeedAsync(body, { baseUrl: BASE });
    expect(got).toMatchObject({ ok: false, code: 'FEED_MALFORMED' });
    expect(!got.ok && got.error).toContain('deeper than 64 levels');
  });
});

describe('rss max_items_considered', () => {
  it('considers only the newest items of a large feed, with one warning', async () => {
    let count = 30;
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/rss+xml' });
      res.end(bigRss(count));
    });
    cleanup.push(() => server.close());
    const logger = memoryLogger();
    const h = harness({
      kind: rssPollerKind,
      jobs: [
        job('news', 'rss', {
          feed_url: `${server.url}/feed`,
          message_template: '{title}',
          allow_private_networks: true,
          max_items_considered: 10,
        }),
      ],
      logger,
    });
    cleanup.push(() => h.service.stop());
    await h.service.start();
    expect(await h.service.run('news')).toMatchObject({ status: 'ok', items_seen: 10 });
    count = 32;
    expect(await h.service.run('news')).toMatchObject({ status: 'ok', items_dispatched: 2 });
    expect(h.dispatcher.texts()).toEqual(['Post 31', 'Post 32']);
    const warn = logger.find('rss considered only the newest items of a large feed');
    expect(warn).toHaveLength(1);
    expect(warn[0]!.fields).toMatchObject({ considered: 10, dropped: 20 });
  });
});
