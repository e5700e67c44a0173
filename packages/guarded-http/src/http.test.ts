import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../test/servers.js';
import { createGuardedHttp, type GuardedHttp } from './client.js';
import { conditionalHeaders, validatorsFrom, type Validators } from './conditional.js';
import { GuardedHttpError } from './errors.js';
import { clampRetryAfter } from './retry-after.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const FEED_ETAG = 'W/"feed-v1"';
const FEED_LM = 'Sun, 01 Mar 2026 11:00:00 GMT';
const SECRET = 'sentinel-secret-91c2';

let server: TestServer;
let http: GuardedHttp;

beforeAll(async () => {
  server = await startServer((req, res, body) => {
    const path = req.url ?? '/';
    switch (path) {
      case '/429-seconds':
        res.writeHead(429, { 'retry-after': '120' });
        return res.end('slow down');
      case '/503-date':
        res.writeHead(503, { 'retry-after': new Date(NOW + 90_000).toUTCString() });
        return res.end();
      case '/429-far':
        res.writeHead(429, { 'retry-after': String(3 * 86_400) });
        return res.end();
      case '/429-bad':
        res.writeHead(429, { 'retry-after': 'tomorrow-ish' });
        return res.end();
      case '/feed': {
        if (req.headers['if-none-match'] === FEED_ETAG && req.headers['if-modified-since'] === FEED_LM) {
          // Refreshes the ETag only; Last-Modified is left out.
          res.writeHead(304, { etag: 'W/"feed-v2"' });
          return res.end();
        }
        res.writeHead(200, {
          etag: FEED_ETAG,
          'last-modified': FEED_LM,
          'content-type': 'application/rss+xml',
        });
        return res.end('<rss/>');
      }
      case '/json':
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        return res.end('{"items":[{"id":1,"title":"héllo"}]}');
      case '/not-json':
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`<html>${SECRET}</html>`);
      case '/latin1':
        res.writeHead(200, { 'content-type': 'text/plain; charset=ISO-8859-1' });
        return res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
      case '/multi':
        res.setHeader('x-multi', ['a', 'b']);
        return res.end('m');
      case '/echo':
        res.writeHead(201, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ method: req.method, body, type: req.headers['content-type'] ?? null }),
        );
      default:
        res.writeHead(200, { 'content-length': '5' });
        return res.end(req.method === 'HEAD' ? undefined : 'hello');
    }
  });
});

afterAll(async () => {
  await server.close();
});

afterEach(async () => {
  await http?.close();
});

const opts = { allowPrivateNetworks: true } as const;

async function failure(p: Promise<unknown>): Promise<GuardedHttpError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GuardedHttpError);
    return err as GuardedHttpError;
  }
  throw new Error('expected the request to fail');
}

describe('Retry-After on responses', () => {
  it('429 with delta-seconds', async () => {
    http = createGuardedHttp({ now: () => NOW });
    const res = await http.request(`${server.origin}/429-seconds`, opts);
    expect(res.status).toBe(429);
    expect(res.retryAfterMs).toBe(120_000);
    expect(res.text()).toBe('slow down');
  });

  it('503 with an HTTP-date, relative to the injected clock', async () => {
    http = createGuardedHttp({ now: () => NOW });
    const res = await http.request(`${server.origin}/503-date`, opts);
    expect(res.status).toBe(503);
    expect(res.retryAfterMs).toBe(90_000);
  });

  it('is unclamped on the response; clampRetryAfter caps it at 1 h', async () => {
    http = createGuardedHttp({ now: () => NOW });
    const res = await http.request(`${server.origin}/429-far`, opts);
    expect(res.retryAfterMs).toBe(3 * 86_400_000);
    expect(clampRetryAfter(res.retryAfterMs!)).toBe(3_600_000);
  });

  it('is undefined when malformed or absent', async () => {
    http = createGuardedHttp({ now: () => NOW });
    expect((await http.request(`${server.origin}/429-bad`, opts)).retryAfterMs).toBeUndefined();
    expect((await http.request(`${server.origin}/plain`, opts)).retryAfterMs).toBeUndefined();
  });
});

describe('conditional GET', () => {
  it('stores validators from a 200, sends them back, and refreshes them from the 304', async () => {
    http = createGuardedHttp();
    const first = await http.request(`${server.origin}/feed`, opts);
    expect(first.status).toBe(200);
    const stored: Validators = validatorsFrom(first.headers);
    expect(stored).toEqual({ etag: FEED_ETAG, lastModified: FEED_LM });

    const second = await http.request(`${server.origin}/feed`, {
      ...opts,
      headers: conditionalHeaders(stored),
    });
    const sent = server.requests.at(-1)!.headers;
    expect(sent['if-none-match']).toBe(FEED_ETAG);
    expect(sent['if-modified-since']).toBe(FEED_LM);
    expect(second.status).toBe(304);
    expect(second.body).toHaveLength(0);
    expect(validatorsFrom(second.headers, stored)).toEqual({ etag: 'W/"feed-v2"', lastModified: FEED_LM });
  });
});

describe('response', () => {
  it('exposes status, headers, final URL and parsed JSON', async () => {
    http = createGuardedHttp();
    const res = await http.request(`${server.origin}/json`, opts);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.url).toBe(`${server.origin}/json`);
    expect(res.redirects).toEqual([]);
    expect(res.json()).toEqual({ items: [{ id: 1, title: 'héllo' }] });
    expect(Buffer.isBuffer(res.body)).toBe(true);
  });

  it('decodes text with the declared charset', async () => {
    http = createGuardedHttp();
    expect((await http.request(`${server.origin}/latin1`, opts)).text()).toBe('café');
  });

  it('joins repeated headers', async () => {
    http = createGuardedHttp();
    expect((await http.request(`${server.origin}/multi`, opts)).headers['x-multi']).toBe('a, b');
  });

  it('json() on a non-JSON body throws HTTP_INVALID_JSON without quoting the body', async () => {
    http = createGuardedHttp();
    const res = await http.request(`${server.origin}/not-json`, opts);
    let caught: unknown;
    try {
      res.json();
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(GuardedHttpError);
    expect((caught as GuardedHttpError).code).toBe('HTTP_INVALID_JSON');
    expect((caught as GuardedHttpError).message).not.toContain(SECRET);
  });

  it('HEAD returns headers and an empty body', async () => {
    http = createGuardedHttp();
    const res = await http.request(`${server.origin}/plain`, { ...opts, method: 'head' });
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('5');
    expect(res.body).toHaveLength(0);
  });

  it('POST sends the body and content type', async () => {
    http = createGuardedHttp();
    const res = await http.request(`${server.origin}/echo`, {
      ...opts,
      method: 'POST',
      body: '{"q":1}',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(res.status).toBe(201);
    expect(res.json()).toEqual({ method: 'POST', body: '{"q":1}', type: 'application/json' });
  });

  it('sends the configured User-Agent unless the request sets one', async () => {
    http = createGuardedHttp({ userAgent: 'test-agent/1' });
    await http.request(`${server.origin}/plain`, opts);
    expect(server.requests.at(-1)!.headers['user-agent']).toBe('test-agent/1');
    await http.request(`${server.origin}/plain`, { ...opts, headers: { 'User-Agent': 'mine/2' } });
    expect(server.requests.at(-1)!.headers['user-agent']).toBe('mine/2');
  });
});

describe('bad input', () => {
  it.each([
    ['not a url', 'HTTP_BAD_URL'],
    ['/relative/path', 'HTTP_BAD_URL'],
    ['http://', 'HTTP_BAD_URL'],
  ])('%j -> %s', async (url, code) => {
    http = createGuardedHttp();
    expect((await failure(http.request(url))).code).toBe(code);
  });

  it('refuses header values with CR/LF without echoing them', async () => {
    http = createGuardedHttp();
    const err = await failure(
      http.request(`${server.origin}/plain`, {
        ...opts,
        headers: { authorization: `Bearer ${SECRET}\r\nX: y` },
      }),
    );
    expect(err.code).toBe('HTTP_INVALID_REQUEST');
    expect(err.message).toContain('authorization');
    expect(err.message).not.toContain(SECRET);
  });

  it.each([
    [{ headers: { host: 'evil.test' } }],
    [{ headers: { 'bad header': 'x' } }],
    [{ headers: { 'content-length': '1' } }],
    [{ method: 'TRACE' }],
    [{ method: 'GET', body: 'x' }],
  ])('refuses %j as HTTP_INVALID_REQUEST', async (extra) => {
    http = createGuardedHttp();
    const before = server.connections();
    const err = await failure(http.request(`${server.origin}/plain`, { ...opts, ...extra }));
    expect(err.code).toBe('HTTP_INVALID_REQUEST');
    expect(server.connections()).toBe(before);
  });

  it('fails with HTTP_CLOSED after close()', async () => {
    http = createGuardedHttp();
    await http.request(`${server.origin}/plain`, opts);
    await http.close();
    expect((await failure(http.request(`${server.origin}/plain`, opts))).code).toBe('HTTP_CLOSED');
  });
});
