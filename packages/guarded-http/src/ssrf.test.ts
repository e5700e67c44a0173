import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tableResolver, type TestServer } from '../test/servers.js';
import { createGuardedHttp, type GuardedHttp } from './client.js';
import { GuardedHttpError } from './errors.js';

// The loopback target every refused request would reach if the guard let it through.
let target: TestServer;
// "Public" servers: loopback addresses that only the unsafeAllowAddresses test seam lets through.
let pubA: TestServer;
let pubB: TestServer;

const SECRET = 'sentinel-secret-7f3a';

async function refusal(p: Promise<unknown>): Promise<GuardedHttpError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GuardedHttpError);
    return err as GuardedHttpError;
  }
  throw new Error('expected the request to be refused');
}

beforeAll(async () => {
  target = await startServer((_req, res) => res.end('reached'));
  pubA = await startServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://a.test');
    const to = url.searchParams.get('to');
    if (url.pathname === '/redirect' && to !== null) {
      res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: to });
      res.end();
      return;
    }
    const hops = Number(url.searchParams.get('hops') ?? 0);
    if (url.pathname === '/chain') {
      const next = hops > 1 ? `/chain?hops=${hops - 1}` : '/landing';
      res.writeHead(302, { location: next });
      res.end();
      return;
    }
    res.setHeader('connection', 'close');
    res.end(`public-a ${req.socket.localAddress}`);
  }, '127.0.0.2');
  pubB = await startServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://b.test');
    const to = url.searchParams.get('to');
    if (url.pathname === '/redirect' && to !== null) {
      res.writeHead(302, { location: to });
      res.end();
      return;
    }
    res.end('public-b');
  }, '127.0.0.3');
});

afterAll(async () => {
  await Promise.all([target.close(), pubA.close(), pubB.close()]);
});

function names(): ReturnType<typeof tableResolver> {
  return tableResolver({
    'a.test': ['127.0.0.2'],
    'b.test': ['127.0.0.3'],
    'loopback.test': ['127.0.0.1'],
    '127.0.0.1.nip.io': ['127.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    'mixed.test': ['127.0.0.2', '127.0.0.1'],
    'mixed6.test': ['127.0.0.2', '::1'],
    'mapped.test': ['::ffff:127.0.0.1'],
    'ula.test': ['fd12:3456::1'],
    'private10.test': ['10.0.0.5'],
    'zero.test': ['0.0.0.0'],
    'garbage.test': ['not-an-address'],
    'empty.test': [],
  });
}

const UNSAFE = ['127.0.0.2', '127.0.0.3'];
let http: GuardedHttp;
let dns: ReturnType<typeof tableResolver>;

function client(extra: Parameters<typeof createGuardedHttp>[0] = {}): GuardedHttp {
  dns = names();
  http = createGuardedHttp({
    resolver: dns.resolve,
    unsafeAllowAddresses: UNSAFE,
    timeoutMs: 3_000,
    connectTimeoutMs: 1_000,
    ...extra,
  });
  return http;
}

afterEach(async () => {
  await http?.close();
});

describe('SSRF table: refused before any connection', () => {
  // Literal forms: each names the target's port, so a guard failure on a loopback form would
  // reach the counting server.
  const literal = [
    '127.0.0.1',
    '127.1',
    '2130706433',
    '0x7f000001',
    '017700000001',
    '0177.0.0.1',
    '0x7f.1',
    '127.0.0.1.',
    '0',
    '0.0.0.0',
    '[::]',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[0:0:0:0:0:ffff:7f00:1]',
    '[::127.0.0.1]',
    '169.254.169.254',
    '2852039166',
    '0xa9fea9fe',
    '0251.0376.0251.0376',
    '[fd00:ec2::254]',
    '[fd00::1]',
    '[fe80::1]',
    '100.64.0.1',
    '100.100.100.200',
    '10.0.0.1',
    '172.16.0.1',
    '192.168.1.1',
    '224.0.0.1',
    '255.255.255.255',
    '[64:ff9b::7f00:1]',
    '[2002:7f00:1::]',
    '[2001:0:4136:e378:8000:63bf:80ff:fffe]',
    '[ff02::1]',
    '[fec0::1]',
    '[::ffff:a9fe:a9fe]',
    '192.0.2.1',
    '[2001:db8::1]',
    '198.18.0.1',
    '240.0.0.1',
    'localhost',
    'LOCALHOST',
    'localhost.',
    'api.localhost',
  ];

  it.each(literal)('http://%s refused without DNS or TCP', async (host) => {
    const h = client();
    const err = await refusal(h.request(`http://${host}:${target.port}/path?token=${SECRET}`));
    expect(err.code).toBe('HTTP_SSRF_BLOCKED');
    expect(err.host).toBeTruthy();
    expect(err.category).toBeTruthy();
    expect(err.message).not.toContain(SECRET);
    expect(err.url).not.toContain(SECRET);
    expect(dns.total()).toBe(0);
    expect(target.connections()).toBe(0);
  });

  const resolved = [
    'loopback.test',
    '127.0.0.1.nip.io',
    'metadata.test',
    'mixed.test',
    'mixed6.test',
    'mapped.test',
    'ula.test',
    'private10.test',
    'zero.test',
    'garbage.test',
  ];

  it.each(resolved)('%s (resolves to a refused address) refused at connect', async (host) => {
    const h = client();
    const err = await refusal(h.request(`http://${host}:${target.port}/`));
    expect(err.code).toBe('HTTP_SSRF_BLOCKED');
    expect(err.host).toBe(host);
    expect(err.message).toContain(host);
    expect(dns.calls.get(host)).toBe(1);
    expect(target.connections()).toBe(0);
    expect(pubA.requests.filter((r) => r.path === '/')).toHaveLength(0);
  });

  it('counts at least 40 refused forms', () => {
    expect(literal.length + resolved.length).toBeGreaterThanOrEqual(40);
  });

  it('an unresolvable or empty name is a network error, not a connection', async () => {
    const h = client();
    const err = await refusal(h.request(`http://empty.test:${target.port}/`));
    expect(err.code).toBe('HTTP_NETWORK');
    expect(err.causeCode).toBe('ENOTFOUND');
    const err2 = await refusal(h.request(`http://nowhere.test:${target.port}/`));
    expect(err2.code).toBe('HTTP_NETWORK');
    expect(target.connections()).toBe(0);
  });

  it('a zone id literal and URL credentials are refused as bad URLs', async () => {
    const h = client();
    expect((await refusal(h.request(`http://[fe80::1%25eth0]:${target.port}/`))).code).toBe('HTTP_BAD_URL');
    const err = await refusal(h.request(`http://user:${SECRET}@a.test:${pubA.port}/`));
    expect(err.code).toBe('HTTP_BAD_URL');
    expect(err.message).not.toContain(SECRET);
    expect(err.message).toContain('credentials');
    expect(dns.total()).toBe(0);
  });

  it.each([
    'ftp://a.test/x',
    'file:///etc/passwd',
    'gopher://a.test:70/_x',
    'data:text/plain,hi',
    'ws://a.test/',
  ])('%s refused as a bad scheme', async (url) => {
    const h = client();
    const err = await refusal(h.request(url));
    expect(err.code).toBe('HTTP_BAD_SCHEME');
    expect(dns.total()).toBe(0);
  });

  it('logs the refusal with host and category but not the query', async () => {
    const records: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log = (msg: string, fields?: Record<string, unknown>): void => {
      records.push(fields === undefined ? { msg } : { msg, fields });
    };
    const h = client({ logger: { debug: log, info: log, warn: log } });
    await refusal(h.request(`http://loopback.test:${target.port}/?key=${SECRET}`));
    const rec = records.find((r) => r.msg === 'ssrf guard refused');
    expect(rec?.fields).toMatchObject({ host: 'loopback.test', address: '127.0.0.1', category: 'loopback' });
    expect(JSON.stringify(records)).not.toContain(SECRET);
  });
});

describe('allowPrivateNetworks', () => {
  it('reaches loopback and private names, per request', async () => {
    const own = await startServer((_req, res) => res.end('reached'));
    try {
      const h = client();
      const res = await h.request(`http://127.0.0.1:${own.port}/`, { allowPrivateNetworks: true });
      expect(res.status).toBe(200);
      expect(res.text()).toBe('reached');
      const byName = await h.request(`http://loopback.test:${own.port}/`, { allowPrivateNetworks: true });
      expect(byName.status).toBe(200);
      expect(own.requests).toHaveLength(2);
      // The same client still refuses without the flag.
      const err = await refusal(h.request(`http://loopback.test:${own.port}/`));
      expect(err.code).toBe('HTTP_SSRF_BLOCKED');
      expect(own.requests).toHaveLength(2);
    } finally {
      await own.close();
    }
  });

  it('keeps link-local and cloud metadata refused', async () => {
    const h = client();
    const err = await refusal(
      h.request(`http://metadata.test:${target.port}/`, { allowPrivateNetworks: true }),
    );
    expect(err.category).toBe('metadata');
    const err2 = await refusal(
      h.request(`http://169.254.169.254/latest/meta-data/`, { allowPrivateNetworks: true }),
    );
    expect(err2.code).toBe('HTTP_SSRF_BLOCKED');
    const err3 = await refusal(h.request(`http://[fe80::1]:${target.port}/`, { allowPrivateNetworks: true }));
    expect(err3.category).toBe('linkLocal');
  });
});

describe('DNS rebinding and pinning', () => {
  it('connects to the address it checked, and re-checks every new connection', async () => {
    const rebinding = tableResolver({ 'rebind.test': (n) => (n === 1 ? ['127.0.0.2'] : ['127.0.0.1']) });
    http = createGuardedHttp({ resolver: rebinding.resolve, unsafeAllowAddresses: UNSAFE, timeoutMs: 3_000 });
    const before = pubA.requests.length;

    const first = await http.request(`http://rebind.test:${pubA.port}/`);
    expect(first.status).toBe(200);
    // One resolution for one connection: no separate "check" lookup whose answer could differ.
    expect(rebinding.calls.get('rebind.test')).toBe(1);
    expect(pubA.requests.slice(before).map((r) => r.localAddress)).toEqual(['127.0.0.2']);
    expect(pubA.requests.at(-1)?.headers.host).toBe(`rebind.test:${pubA.port}`);

    // pubA closes each connection, so the next request resolves again and now gets 127.0.0.1.
    const err = await refusal(http.request(`http://rebind.test:${pubA.port}/`));
    expect(err.code).toBe('HTTP_SSRF_BLOCKED');
    expect(err.category).toBe('loopback');
    expect(rebinding.calls.get('rebind.test')).toBe(2);
    expect(target.connections()).toBe(0);
  });

  it('ignores HTTP_PROXY and friends (no proxy bypasses the guard)', async () => {
    const proxy = await startServer((_req, res) => res.end('proxied'));
    const saved = {
      HTTP_PROXY: process.env.HTTP_PROXY,
      HTTPS_PROXY: process.env.HTTPS_PROXY,
      ALL_PROXY: process.env.ALL_PROXY,
    };
    process.env.HTTP_PROXY = proxy.origin;
    process.env.HTTPS_PROXY = proxy.origin;
    process.env.ALL_PROXY = proxy.origin;
    try {
      const h = client();
      const res = await h.request(`http://a.test:${pubA.port}/`);
      expect(res.text()).toContain('public-a');
      const err = await refusal(h.request(`http://loopback.test:${target.port}/`));
      expect(err.code).toBe('HTTP_SSRF_BLOCKED');
      expect(proxy.connections()).toBe(0);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await proxy.close();
    }
  });
});

// A redirect from public server A to `to`.
function via(to: string, status = 302): string {
  return `http://a.test:${pubA.port}/redirect?status=${status}&to=${encodeURIComponent(to)}`;
}

describe('redirects', () => {
  it.each([
    ['a literal loopback address', () => `http://127.0.0.1:${target.port}/`],
    ['a name resolving to loopback', () => `http://loopback.test:${target.port}/`],
    ['IPv6 loopback', () => `http://[::1]:${target.port}/`],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
    ['localhost', () => `http://localhost:${target.port}/`],
  ])('public -> %s is refused', async (_label, to) => {
    const h = client();
    const err = await refusal(h.request(via(to())));
    expect(err.code).toBe('HTTP_SSRF_BLOCKED');
    expect(target.connections()).toBe(0);
  });

  it('public -> public -> private chain is refused at the last hop', async () => {
    const h = client();
    const toPrivate = `http://b.test:${pubB.port}/redirect?to=${encodeURIComponent(`http://127.0.0.1:${target.port}/`)}`;
    const err = await refusal(h.request(via(toPrivate)));
    expect(err.code).toBe('HTTP_SSRF_BLOCKED');
    expect(pubB.requests.some((r) => r.path.startsWith('/redirect'))).toBe(true);
    expect(target.connections()).toBe(0);
  });

  it.each(['file:///etc/passwd', 'ftp://a.test/x', 'gopher://a.test:70/_x'])(
    'redirect to %s is refused as a bad scheme',
    async (to) => {
      const h = client();
      const err = await refusal(h.request(via(to)));
      expect(err.code).toBe('HTTP_BAD_SCHEME');
      expect(err.message).toContain('redirect');
    },
  );

  it('redirect to a URL with credentials is refused', async () => {
    const h = client();
    const err = await refusal(h.request(via(`http://u:${SECRET}@b.test:${pubB.port}/`)));
    expect(err.code).toBe('HTTP_BAD_URL');
    expect(err.message).not.toContain(SECRET);
  });

  it('follows 5 redirects and refuses the 6th', async () => {
    const h = client();
    const ok = await h.request(`http://a.test:${pubA.port}/chain?hops=5`);
    expect(ok.status).toBe(200);
    expect(ok.redirects).toHaveLength(5);
    expect(ok.url).toBe(`http://a.test:${pubA.port}/landing`);
    const err = await refusal(h.request(`http://a.test:${pubA.port}/chain?hops=6`));
    expect(err.code).toBe('HTTP_TOO_MANY_REDIRECTS');
  });

  it('followRedirects: false returns the 3xx as it is', async () => {
    const h = client();
    const res = await h.request(via(`http://127.0.0.1:${target.port}/`), { followRedirects: false });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(`http://127.0.0.1:${target.port}/`);
    expect(target.connections()).toBe(0);
  });

  const secretHeaders = {
    authorization: `Bearer ${SECRET}`,
    cookie: `session=${SECRET}`,
    'proxy-authorization': `Basic ${SECRET}`,
    'x-api-key': SECRET,
    accept: 'application/json',
  };

  it('drops credentials and custom headers on a cross-origin redirect', async () => {
    const h = client();
    const before = pubB.requests.length;
    const res = await h.request(via(`http://b.test:${pubB.port}/landing`), { headers: secretHeaders });
    expect(res.status).toBe(200);
    expect(res.text()).toBe('public-b');
    const seen = pubB.requests.slice(before);
    expect(seen).toHaveLength(1);
    const headers = seen[0]!.headers;
    expect(headers.authorization).toBeUndefined();
    expect(headers.cookie).toBeUndefined();
    expect(headers['proxy-authorization']).toBeUndefined();
    expect(headers['x-api-key']).toBeUndefined();
    expect(JSON.stringify(headers)).not.toContain(SECRET);
    expect(headers.accept).toBe('application/json');
    expect(headers['user-agent']).toBeTruthy();
  });

  it('a different port on the same host is another origin', async () => {
    const h = client();
    const before = pubB.requests.length;
    await h.request(
      `http://b.test:${pubB.port}/redirect?to=${encodeURIComponent(`http://a.test:${pubA.port}/x`)}`,
      {
        headers: secretHeaders,
      },
    );
    expect(pubB.requests[before]?.headers.authorization).toBe(`Bearer ${SECRET}`);
    const landed = pubA.requests.at(-1)!;
    expect(landed.path).toBe('/x');
    expect(landed.headers.authorization).toBeUndefined();
  });

  it('keeps credentials on a same-origin redirect', async () => {
    const h = client();
    const res = await h.request(via('/same-origin-landing'), { headers: secretHeaders });
    expect(res.status).toBe(200);
    const landed = pubA.requests.at(-1)!;
    expect(landed.path).toBe('/same-origin-landing');
    expect(landed.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(landed.headers['x-api-key']).toBe(SECRET);
    expect(landed.headers.cookie).toBe(`session=${SECRET}`);
  });

  it.each([
    [307, 'POST'],
    [308, 'POST'],
    [308, 'PUT'],
    [301, 'PATCH'],
  ])(
    'a cross-origin %i after a %s with a body is refused: the body never reaches the other origin',
    async (status, method) => {
      const h = client();
      const before = pubB.requests.length;
      const err = await refusal(
        h.request(via(`http://b.test:${pubB.port}/collect`, status), {
          method,
          body: JSON.stringify({ token: SECRET }),
          headers: { 'content-type': 'application/json' },
        }),
      );
      expect(err.code).toBe('HTTP_REDIRECT_REFUSED');
      expect(err.message).toContain(`another origin, http://b.test:${pubB.port}`);
      expect(err.message).not.toContain(SECRET);
      expect(pubA.requests.at(-1)).toMatchObject({ method, path: expect.stringMatching(/^\/redirect/) });
      expect(pubB.requests.slice(before)).toEqual([]);
    },
  );

  it('a cross-origin 307 without a body, and a 303 after a POST, are followed', async () => {
    const h = client();
    const before = pubB.requests.length;
    const empty = await h.request(via(`http://b.test:${pubB.port}/no-body`, 307), { method: 'POST' });
    expect(empty.status).toBe(200);
    const switched = await h.request(via(`http://b.test:${pubB.port}/see-other`, 303), {
      method: 'POST',
      body: JSON.stringify({ token: SECRET }),
      headers: { 'content-type': 'application/json' },
    });
    expect(switched.status).toBe(200);
    const seen = pubB.requests.slice(before);
    expect(seen.map((r) => [r.method, r.path, r.body])).toEqual([
      ['POST', '/no-body', ''],
      ['GET', '/see-other', ''],
    ]);
  });

  it('307 keeps method and body; 303 switches to GET without a body', async () => {
    const h = client();
    await h.request(via('/kept', 307), {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'content-type': 'application/json' },
    });
    const kept = pubA.requests.at(-1)!;
    expect(kept).toMatchObject({ method: 'POST', path: '/kept', body: '{"a":1}' });
    await h.request(via('/switched', 303), {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'content-type': 'application/json' },
    });
    const switched = pubA.requests.at(-1)!;
    expect(switched).toMatchObject({ method: 'GET', path: '/switched', body: '' });
    expect(switched.headers['content-type']).toBeUndefined();
  });
});
