import { classifyError, validateTemplate } from '@agent/poller-core';
import { runKindTick, testPollerKind } from '@agent/poller-core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { entries, memoryLogger, rss, startServer, withLogger, type TestServer } from '../test/helpers.js';
import { rssPollerKind, sourceKeyOfUrl, type RssCursor } from './kind.js';
import { RSS_PLACEHOLDERS } from './template.js';

const deliver = { channel: 'chat_a', to: 'u1' };
const base = { deliver, message_template: '{title} {link}' };

let servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers) await s.close();
  servers = [];
});

async function serve(handle: Parameters<typeof startServer>[0], host?: string): Promise<TestServer> {
  const s = await startServer(handle, host);
  servers.push(s);
  return s;
}

function feedServer(status: number, body = rss(entries(1, 2, 3)), headers: Record<string, string> = {}) {
  return async () => {
    const s = await startServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/rss+xml', ...headers });
      res.end(body);
    });
    return {
      config: { ...base, feed_url: `${s.url}/feed.xml`, allow_private_networks: true },
      close: s.close,
    };
  };
}

testPollerKind(rssPollerKind, {
  validConfigs: [
    { ...base, feed_url: 'https://example.org/feed.xml' },
    {
      ...base,
      message_template: '{feed_title}: {title} ({published}, {author}) {summary} {id}',
      feed_url: 'http://127.0.0.1:8080/feed',
      allow_private_networks: true,
      max_per_tick: 3,
      timeout_ms: 5000,
      max_body_bytes: 2048,
    },
  ],
  invalidConfigs: [
    { ...base },
    { ...base, feed_url: 'ftp://example.org/feed.xml' },
    { ...base, feed_url: 'not a url' },
    { ...base, feed_url: 'https://example.org/f', message_template: '{title} {body}' },
    { ...base, feed_url: 'http://127.0.0.1/feed' },
    { ...base, feed_url: 'http://localhost:8080/feed' },
    { ...base, feed_url: 'http://[::ffff:10.0.0.1]/feed' },
    { ...base, feed_url: 'http://169.254.169.254/latest', allow_private_networks: true },
    { ...base, feed_url: 'https://user:pw@example.org/f' },
    { ...base, feed_url: 'https://example.org/f', max_per_tick: 0 },
    { ...base, feed_url: 'https://example.org/f', url: 'https://example.org/f' },
    { feed_url: 'https://example.org/f', message_template: '{title}' },
  ],
  scenarios: {
    ok: feedServer(200, rss(entries(1, 2, 3)), { etag: '"v1"' }),
    transient: feedServer(503, 'busy'),
    permanent: feedServer(404, 'gone'),
    hang: async () => {
      const s = await startServer(() => {});
      return { config: { ...base, feed_url: `${s.url}/feed`, allow_private_networks: true }, close: s.close };
    },
  },
});

describe('rss: template placeholders', () => {
  it('an unknown placeholder is rejected with the list of valid ones', () => {
    const problems = validateTemplate('{title} {body}', rssPollerKind.placeholders);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('unknown placeholder "{body}"');
    for (const p of RSS_PLACEHOLDERS) expect(problems[0]).toContain(`{${p}}`);
  });
});

describe('rss: conditional GET', () => {
  it('stores ETag and Last-Modified verbatim, sends them back, and a 304 refreshes them without parsing', async () => {
    const lastModified = 'Wed, 21 Oct 2026 07:28:00 GMT';
    let round = 0;
    const s = await serve((req, res) => {
      round++;
      if (round === 1) {
        res.writeHead(200, { etag: 'W/"abc-1"', 'last-modified': lastModified });
        res.end(rss(entries(1, 2)));
      } else {
        // A 304 with a new ETag and no Last-Modified: the old Last-Modified is kept.
        res.writeHead(304, { etag: '"abc-2"' });
        res.end();
      }
    });
    const config = { ...base, feed_url: `${s.url}/feed`, allow_private_networks: true };
    const first = await runKindTick(rssPollerKind, config);
    expect(first.items.map((i) => i.id)).toEqual(['g1', 'g2']);
    expect(first.cursor).toEqual({ etag: 'W/"abc-1"', last_modified: lastModified });
    expect(s.requests[0]!.headers['if-none-match']).toBeUndefined();

    const second = await runKindTick(rssPollerKind, config, { cursor: first.cursor! });
    expect(s.requests[1]!.headers['if-none-match']).toBe('W/"abc-1"');
    expect(s.requests[1]!.headers['if-modified-since']).toBe(lastModified);
    expect(second).toEqual({
      items: [],
      notModified: true,
      cursor: { etag: '"abc-2"', last_modified: lastModified } satisfies RssCursor,
    });
  });

  it('a 304 answers before any parse: the same server answering 200 with that body fails, the 304 does not', async () => {
    let status = 304;
    const s = await serve((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/html', etag: '"x"' });
      res.end(status === 304 ? undefined : '<html><body>not a feed</body></html>');
    });
    const config = { ...base, feed_url: `${s.url}/feed`, allow_private_networks: true };
    const r = await runKindTick(rssPollerKind, config, { cursor: { etag: '"x"' } });
    expect(r.notModified).toBe(true);
    status = 200;
    const err = await runKindTick(rssPollerKind, config, { cursor: { etag: '"x"' } }).catch(
      (e: unknown) => e,
    );
    expect(classifyError(err)).toBe('transient');
    expect((err as Error).message).toContain('FEED_HTML_PAGE');
  });

  it('a 304 to a request without validators is a Transient error', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(304);
      res.end();
    });
    const err = await runKindTick(rssPollerKind, {
      ...base,
      feed_url: `${s.url}/feed`,
      allow_private_networks: true,
    }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('POLLER_TRANSIENT');
    expect((err as Error).message).toContain('without validators');
  });

  it('a 200 without validators drops the stored ones; garbage in the cursor reads as none', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end(rss(entries(1)));
    });
    const config = { ...base, feed_url: `${s.url}/feed`, allow_private_networks: true };
    const r = await runKindTick(rssPollerKind, config, { cursor: { etag: '"old"' } });
    expect(r.cursor).toEqual({});
    await runKindTick(rssPollerKind, config, { cursor: ['not', 'a', 'cursor'] });
    await runKindTick(rssPollerKind, config, { cursor: { etag: 'bad\r\nvalue', last_modified: 42 } });
    expect(s.requests[1]!.headers['if-none-match']).toBeUndefined();
    expect(s.requests[2]!.headers['if-none-match']).toBeUndefined();
    expect(s.requests[2]!.headers['if-modified-since']).toBeUndefined();
  });
});

describe('rss: items', () => {
  it('returns items oldest first, with template fields and links resolved against the final URL', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/atom+xml' });
      res.end(
        `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Atom</title>` +
          `<entry><id>urn:b</id><title>B</title><link href="/b"/><updated>2026-01-02T00:00:00Z</updated></entry>` +
          `<entry><id>urn:c</id><title>C</title><link href="/c"/><updated>2026-01-03T00:00:00Z</updated></entry>` +
          `<entry><id>urn:a</id><title>A</title><link href="/a"/><updated>2026-01-01T00:00:00Z</updated></entry>` +
          `</feed>`,
      );
    });
    const r = await runKindTick(rssPollerKind, {
      ...base,
      feed_url: `${s.url}/atom`,
      allow_private_networks: true,
    });
    expect(r.items.map((i) => i.id)).toEqual(['urn:a', 'urn:b', 'urn:c']);
    expect(r.items[0]!.fields).toMatchObject({ title: 'A', link: `${s.url}/a`, feed_title: 'Atom' });
    expect(s.requests[0]!.headers.accept).toContain('application/rss+xml');
  });
});

describe('rss: error classes', () => {
  const cases: [number, 'transient' | 'permanent'][] = [
    [401, 'permanent'],
    [403, 'permanent'],
    [404, 'permanent'],
    [410, 'permanent'],
    [400, 'permanent'],
    [408, 'transient'],
    [429, 'transient'],
    [500, 'transient'],
    [502, 'transient'],
    [503, 'transient'],
  ];
  for (const [status, cls] of cases)
    it(`${status} is ${cls}`, async () => {
      const s = await serve((_req, res) => {
        res.writeHead(status);
        res.end('no');
      });
      const err = await runKindTick(rssPollerKind, {
        ...base,
        feed_url: `${s.url}/feed?token=secret-token-1`,
        allow_private_networks: true,
      }).catch((e: unknown) => e);
      expect(classifyError(err)).toBe(cls);
      expect((err as Error).message).toContain(`answered ${status}`);
      expect((err as Error).message).not.toContain('secret-token-1');
    });

  it('a bot challenge (403 with cf-mitigated: challenge) is Permanent and says so', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(403, { 'cf-mitigated': 'challenge', 'content-type': 'text/html' });
      res.end('<html><title>Just a moment...</title></html>');
    });
    const err = await runKindTick(rssPollerKind, {
      ...base,
      feed_url: `${s.url}/feed`,
      allow_private_networks: true,
    }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('POLLER_PERMANENT');
    expect((err as Error).message).toContain('bot challenge');
  });

  it('429 and 503 carry Retry-After in seconds and as an HTTP date, clamped to [1 s, 1 h]', async () => {
    const answers: [number, string][] = [
      [429, '120'],
      [503, new Date(Date.now() + 90_000).toUTCString()],
      [429, '0'],
      [503, '86400'],
    ];
    let i = 0;
    const s = await serve((_req, res) => {
      const [status, retryAfter] = answers[i++]!;
      res.writeHead(status, { 'retry-after': retryAfter });
      res.end();
    });
    const config = { ...base, feed_url: `${s.url}/feed`, allow_private_networks: true };
    const waits: number[] = [];
    for (let n = 0; n < answers.length; n++) {
      const err = await runKindTick(rssPollerKind, config).catch((e: unknown) => e);
      expect(classifyError(err)).toBe('transient');
      waits.push((err as { retryAfterMs: number }).retryAfterMs);
    }
    expect(waits[0]).toBe(120_000);
    expect(waits[1]).toBeGreaterThan(85_000);
    expect(waits[1]).toBeLessThanOrEqual(90_000);
    expect(waits[2]).toBe(1000);
    expect(waits[3]).toBe(3_600_000);
  });

  it('an HTML page, an empty body, a body over max_body_bytes and a timeout are Transient', async () => {
    const bodies: Record<string, string> = {
      '/html': '<!DOCTYPE html><html><head><title>Just a moment</title></head><body></body></html>',
      '/empty': '',
      '/big': rss(entries(...Array.from({ length: 200 }, (_, n) => n))),
    };
    const s = await serve((req, res) => {
      if (req.path === '/slow') return; // never answers
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(bodies[req.path]);
    });
    for (const [path, code] of [
      ['/html', 'FEED_HTML_PAGE'],
      ['/empty', 'FEED_EMPTY'],
      ['/big', 'HTTP_BODY_TOO_LARGE'],
      ['/slow', 'HTTP_TIMEOUT'],
    ] as const) {
      const err = await runKindTick(rssPollerKind, {
        ...base,
        feed_url: `${s.url}${path}`,
        allow_private_networks: true,
        max_body_bytes: 2048,
        timeout_ms: 1000,
      }).catch((e: unknown) => e);
      expect(classifyError(err), path).toBe('transient');
      expect((err as Error).message, path).toContain(code);
    }
  });
});

describe('rss: redirects', () => {
  it('follows a redirect chain and warns with the new URL on a permanent redirect', async () => {
    const s = await serve((req, res) => {
      const to: Record<string, [number, string]> = {
        '/old': [301, '/moved'],
        '/moved': [308, '/current'],
        '/current': [302, '/today.xml'],
      };
      const hop = to[req.path.split('?')[0]!];
      if (hop) {
        res.writeHead(hop[0], { location: hop[1] });
        res.end();
        return;
      }
      res.writeHead(200);
      res.end(rss(entries(7)));
    });
    const logger = memoryLogger();
    const r = await runKindTick(withLogger(rssPollerKind, logger), {
      ...base,
      feed_url: `${s.url}/old?key=k-secret`,
      allow_private_networks: true,
    });
    expect(r.items.map((i) => i.id)).toEqual(['g7']);
    expect(s.requests.map((q) => q.path)).toEqual(['/old?key=k-secret', '/moved', '/current', '/today.xml']);
    const warn = logger.find('rss feed moved permanently; update feed_url');
    expect(warn).toHaveLength(1);
    expect(warn[0]!.level).toBe('warn');
    expect(warn[0]!.fields).toEqual({ feed_url: `${s.url}/old`, new_url: `${s.url}/current` });
    expect(logger.text()).not.toContain('k-secret');
  });

  it('a temporary redirect logs nothing', async () => {
    const s = await serve((req, res) => {
      if (req.path === '/a') {
        res.writeHead(307, { location: '/b' });
        res.end();
        return;
      }
      res.writeHead(200);
      res.end(rss(entries(1)));
    });
    const logger = memoryLogger();
    await runKindTick(withLogger(rssPollerKind, logger), {
      ...base,
      feed_url: `${s.url}/a`,
      allow_private_networks: true,
    });
    expect(logger.records).toEqual([]);
  });
});

describe('rss: SSRF guard', () => {
  it('refuses a loopback feed without allow_private_networks: Permanent, and no request reaches it', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end(rss(entries(1)));
    });
    const err = await runKindTick(rssPollerKind, { ...base, feed_url: `${s.url}/feed` }).catch(
      (e: unknown) => e,
    );
    expect((err as { code?: string }).code).toBe('POLLER_PERMANENT');
    expect((err as Error).message).toContain('refused by the SSRF guard');
    expect((err as Error).message).toContain('allow_private_networks');
    expect(s.requests).toHaveLength(0);
  });

  it('refuses a host name that resolves to loopback, and a public host redirecting to a private one', async () => {
    const inner = await serve((_req, res) => {
      res.writeHead(200);
      res.end(rss(entries(1)));
    });
    const outer = await serve((_req, res) => {
      res.writeHead(302, { location: `${inner.url}/feed` });
      res.end();
    }, '127.0.0.2');
    const port = new URL(inner.url).port;
    const byName = await runKindTick(
      rssPollerKind,
      { ...base, feed_url: `http://feeds.example.test:${port}/feed` },
      { http: { resolver: async () => ['127.0.0.1'] } },
    ).catch((e: unknown) => e);
    expect((byName as { code?: string }).code).toBe('POLLER_PERMANENT');
    const viaRedirect = await runKindTick(
      rssPollerKind,
      { ...base, feed_url: `${outer.url}/feed` },
      { http: { unsafeAllowAddresses: ['127.0.0.2'] } },
    ).catch((e: unknown) => e);
    expect((viaRedirect as { code?: string }).code).toBe('POLLER_PERMANENT');
    expect(outer.requests).toHaveLength(1);
    expect(inner.requests).toHaveLength(0);
  });

  it('a host the guard treats as public is fetched without the option', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end(rss(entries(1)));
    }, '127.0.0.2');
    const r = await runKindTick(
      rssPollerKind,
      { ...base, feed_url: `${s.url}/feed` },
      { http: { unsafeAllowAddresses: ['127.0.0.2'] } },
    );
    expect(r.items).toHaveLength(1);
  });
});

describe('rss: sourceKey', () => {
  it('is the feed URL, with a query string replaced by its hash', () => {
    expect(sourceKeyOfUrl('https://example.org/feed.xml')).toBe('https://example.org/feed.xml');
    const a = sourceKeyOfUrl('https://example.org/feed?token=abc');
    expect(a).toMatch(/^https:\/\/example\.org\/feed\?sha256:[0-9a-f]{64}$/);
    expect(a).not.toContain('abc');
    expect(sourceKeyOfUrl('https://example.org/feed?token=abd')).not.toBe(a);
    expect(rssPollerKind.sourceKey!({ feed_url: 'https://example.org/x' } as never)).toBe(
      'https://example.org/x',
    );
  });
});
