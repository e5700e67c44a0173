import { classifyError, renderTemplate } from '@agent/poller-core';
import { runKindTick, testPollerKind } from '@agent/poller-core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger, startServer, withLogger, type TestServer } from '../test/helpers.js';
import { webhookPollerKind, webhookSourceKey, type WebhookConfig } from './kind.js';

/** The kind's source key; it reads only the source fields, the rest of a job config does not matter to it. */
const kindKey = (c: Partial<WebhookConfig>): string => webhookPollerKind.sourceKey!(c as WebhookConfig);
import { hashSourceKey, sourceKeyOf } from '@agent/poller-runtime';

const deliver = { channel: 'chat_a', to: 'u1' };
const base = { deliver, message_template: '{title}', id_field: 'id' };

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

function json(status: number, body: unknown, extra: Record<string, unknown> = {}) {
  return async () => {
    const s = await startServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    return {
      config: { ...base, url: `${s.url}/api`, allow_private_networks: true, ...extra },
      close: s.close,
    };
  };
}

testPollerKind(webhookPollerKind, {
  validConfigs: [
    { ...base, url: 'https://api.example.org/events' },
    {
      ...base,
      url: 'http://10.0.0.5:8080/events?since=1',
      allow_private_networks: true,
      method: 'POST',
      body: { query: 'open', limit: 5 },
      headers: { Authorization: 'Bearer abc', 'X-Api-Key': 'k' },
      items_path: 'data.0.items',
      id_field: 'meta.id',
      message_template: '{user.name}: {tags.0} {anything}',
      max_per_tick: 3,
      timeout_ms: 2000,
      max_body_bytes: 4096,
    },
    { ...base, url: 'https://api.example.org/ids', id_field: '' },
  ],
  invalidConfigs: [
    { ...base },
    { deliver, message_template: '{title}', url: 'https://api.example.org/x' },
    { ...base, url: 'file:///etc/passwd' },
    { ...base, url: 'http://127.0.0.1:8080/x' },
    { ...base, url: 'http://[::1]/x' },
    { ...base, url: 'http://192.168.1.10/x' },
    { ...base, url: 'http://app.localhost/x' },
    { ...base, url: 'http://169.254.169.254/latest/meta-data', allow_private_networks: true },
    { ...base, url: 'https://api.example.org/x', method: 'PUT' },
    { ...base, url: 'https://api.example.org/x', body: { a: 1 } },
    { ...base, url: 'https://api.example.org/x', headers: { Host: 'evil.example' } },
    { ...base, url: 'https://api.example.org/x', headers: { 'X-Key': 'a\r\nInjected: 1' } },
    { ...base, url: 'https://api.example.org/x', headers: { 'Bad Name': 'v' } },
    { ...base, url: 'https://api.example.org/x', headers: { 'X-Key': 5 } },
    { ...base, url: 'https://api.example.org/x', items_path: 'data..items' },
    { ...base, url: 'https://api.example.org/x', id_field: 'a.' },
    { ...base, url: 'https://api.example.org/x', message_template: '{unclosed' },
  ],
  scenarios: {
    ok: json(
      200,
      {
        data: {
          items: [
            { id: 1, title: 'a' },
            { id: 'b', title: 'b' },
          ],
        },
      },
      { items_path: 'data.items' },
    ),
    transient: json(503, { error: 'busy' }),
    permanent: json(401, { error: 'unauthorized' }),
    hang: async () => {
      const s = await startServer(() => {});
      return { config: { ...base, url: `${s.url}/api`, allow_private_networks: true }, close: s.close };
    },
  },
});

describe('webhook_poll: requests', () => {
  it('GET sends the configured headers and Accept: application/json, and no body', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[]');
    });
    await runKindTick(webhookPollerKind, {
      ...base,
      url: `${s.url}/events?state=open`,
      allow_private_networks: true,
      headers: { Authorization: 'Bearer t-123', 'X-Team': 'blue' },
    });
    const req = s.requests[0]!;
    expect(req.method).toBe('GET');
    expect(req.path).toBe('/events?state=open');
    expect(req.headers.authorization).toBe('Bearer t-123');
    expect(req.headers['x-team']).toBe('blue');
    expect(req.headers.accept).toBe('application/json');
    expect(req.body).toBe('');
  });

  it('POST sends the JSON body with Content-Type, and configured Accept / Content-Type win', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end('{"items":[]}');
    });
    const config = {
      ...base,
      url: `${s.url}/search`,
      allow_private_networks: true,
      method: 'POST',
      body: { query: 'status:open', page: { size: 50 } },
      items_path: 'items',
    };
    await runKindTick(webhookPollerKind, config);
    await runKindTick(webhookPollerKind, {
      ...config,
      headers: { Accept: 'application/vnd.api+json', 'Content-Type': 'application/vnd.api+json' },
    });
    await runKindTick(webhookPollerKind, { ...config, body: undefined });
    expect(s.requests[0]).toMatchObject({
      method: 'POST',
      body: '{"query":"status:open","page":{"size":50}}',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
    });
    expect(s.requests[1]!.headers).toMatchObject({
      'content-type': 'application/vnd.api+json',
      accept: 'application/vnd.api+json',
    });
    expect(s.requests[2]).toMatchObject({ method: 'POST', body: '' });
    expect(s.requests[2]!.headers['content-type']).toBeUndefined();
  });
});

describe('webhook_poll: items', () => {
  const responses: Record<string, unknown> = {
    '/root': [{ id: 1 }, { id: 2 }],
    '/nested': { data: { items: [{ id: 'a' }, { id: 'b' }] } },
    '/indexed': { data: [{ items: [{ id: 'x' }] }, { items: [{ id: 'y' }] }] },
    '/ids': ['k1', 'k2', 'k1'],
  };
  it('finds the array at items_path: root, dotted, with a numeric segment; ids from id_field', async () => {
    const s = await serve((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(responses[req.path]));
    });
    const ids = async (path: string, items_path: string, id_field = 'id') =>
      (
        await runKindTick(webhookPollerKind, {
          ...base,
          url: `${s.url}${path}`,
          allow_private_networks: true,
          items_path,
          id_field,
        })
      ).items.map((i) => i.id);
    expect(await ids('/root', '')).toEqual(['1', '2']);
    expect(await ids('/nested', 'data.items')).toEqual(['a', 'b']);
    expect(await ids('/indexed', 'data.0.items')).toEqual(['x']);
    expect(await ids('/indexed', 'data.1.items')).toEqual(['y']);
    expect(await ids('/ids', '', '')).toEqual(['k1', 'k2']);
  });

  it('no array at items_path, or a body that is not JSON, is Transient', async () => {
    const s = await serve((req, res) => {
      res.writeHead(200, { 'content-type': req.path === '/html' ? 'text/html' : 'application/json' });
      res.end(
        req.path === '/html'
          ? '<html>login</html>'
          : req.path === '/null'
            ? '{"data":null}'
            : '{"data":{"items":{}}}',
      );
    });
    for (const [path, text] of [
      ['/html', 'not JSON (content-type text/html'],
      ['/null', 'WEBHOOK_ITEMS'],
      ['/object', 'WEBHOOK_ITEMS_NOT_ARRAY'],
      ['/missing', 'WEBHOOK_ITEMS_PATH_MISSING'],
    ] as const) {
      const err = await runKindTick(webhookPollerKind, {
        ...base,
        url: `${s.url}${path}`,
        allow_private_networks: true,
        items_path: path === '/missing' ? 'results' : 'data.items',
      }).catch((e: unknown) => e);
      expect(classifyError(err), path).toBe('transient');
      expect((err as Error).message, path).toContain(text);
    }
  });

  it('a non-JSON Content-Type with a JSON body is accepted; 204 is an empty list', async () => {
    const s = await serve((req, res) => {
      if (req.path === '/none') {
        res.writeHead(204);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('[{"id":7}]');
    });
    const cfg = { ...base, allow_private_networks: true };
    expect((await runKindTick(webhookPollerKind, { ...cfg, url: `${s.url}/text` })).items).toHaveLength(1);
    expect((await runKindTick(webhookPollerKind, { ...cfg, url: `${s.url}/none` })).items).toEqual([]);
  });

  it('skips items without a usable id with a warning that names the first one', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end(JSON.stringify([{ id: 1 }, { title: 'no id' }, { id: null }, { id: 1.5 }, { id: '2' }]));
    });
    const logger = memoryLogger();
    const kind = withLogger(webhookPollerKind, logger);
    const cfg = { ...base, url: `${s.url}/x`, allow_private_networks: true };
    const r = await runKindTick(kind, cfg);
    expect(r.items.map((i) => i.id)).toEqual(['1', '2']);
    const warns = logger.find('webhook_poll items without a usable id were skipped');
    expect(warns.map((w) => w.level)).toEqual(['warn']);
    expect(warns[0]!.fields).toMatchObject({ skipped: 3, first_index: 1 });
    expect(warns[0]!.fields.first_problem).toContain('id_field "id" is missing');
  });

  it('renders dotted placeholders, and a value containing {title} is not expanded again', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end(
        JSON.stringify({
          events: [
            { id: 9, title: 'Deploy', user: { name: 'Ada' }, tags: ['prod', 'eu'], note: 'see {title}' },
          ],
        }),
      );
    });
    const r = await runKindTick(webhookPollerKind, {
      ...base,
      url: `${s.url}/x`,
      allow_private_networks: true,
      items_path: 'events',
    });
    const text = renderTemplate(
      '{title} by {user.name} [{tags.0}] {tags} {note} {missing.x}',
      r.items[0]!.fields,
    );
    expect(text).toBe('Deploy by Ada [prod] ["prod","eu"] see {title} ');
  });
});

describe('webhook_poll: error classes', () => {
  const cases: [number, 'transient' | 'permanent'][] = [
    [400, 'permanent'],
    [401, 'permanent'],
    [403, 'permanent'],
    [404, 'permanent'],
    [422, 'permanent'],
    [408, 'transient'],
    [425, 'transient'],
    [429, 'transient'],
    [500, 'transient'],
    [503, 'transient'],
  ];
  for (const [status, cls] of cases)
    it(`${status} is ${cls}`, async () => {
      const s = await serve((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '30' });
        res.end('{"error":"x"}');
      });
      const err = await runKindTick(webhookPollerKind, {
        ...base,
        url: `${s.url}/x`,
        allow_private_networks: true,
      }).catch((e: unknown) => e);
      expect(classifyError(err)).toBe(cls);
      expect((err as Error).message).toContain(`answered ${status}`);
      expect((err as { retryAfterMs?: number }).retryAfterMs).toBe(30_000);
    });

  it('a 429 with an HTTP-date Retry-After carries the wait', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(429, { 'retry-after': new Date(Date.now() + 300_000).toUTCString() });
      res.end();
    });
    const err = await runKindTick(webhookPollerKind, {
      ...base,
      url: `${s.url}/x`,
      allow_private_networks: true,
    }).catch((e: unknown) => e);
    expect((err as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(295_000);
  });

  it('network failures and timeouts are Transient', async () => {
    const s = await serve(() => {});
    const closed = await startServer(() => {});
    const deadUrl = `${closed.url}/x`;
    await closed.close();
    const cfg = { ...base, allow_private_networks: true, timeout_ms: 1000 };
    const timeout = await runKindTick(webhookPollerKind, { ...cfg, url: `${s.url}/x` }).catch(
      (e: unknown) => e,
    );
    expect(classifyError(timeout)).toBe('transient');
    expect((timeout as Error).message).toContain('HTTP_TIMEOUT');
    const refused = await runKindTick(webhookPollerKind, { ...cfg, url: deadUrl }).catch((e: unknown) => e);
    expect(classifyError(refused)).toBe('transient');
    expect((refused as Error).message).toContain('HTTP_NETWORK');
  });

  it('the SSRF guard refuses a loopback endpoint without the option: Permanent, no request sent', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end('[]');
    });
    const err = await runKindTick(webhookPollerKind, {
      ...base,
      url: `${s.url}/x`,
      headers: { Authorization: 'Bearer never-sent' },
    }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('POLLER_PERMANENT');
    expect((err as Error).message).toContain('refused by the SSRF guard');
    expect((err as Error).message).not.toContain('never-sent');
    expect(s.requests).toHaveLength(0);
  });

  it('a header value the client refuses is Permanent, and the error does not repeat the value', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      res.end('[]');
    });
    const err = await runKindTick(webhookPollerKind, {
      ...base,
      url: `${s.url}/x`,
      allow_private_networks: true,
      headers: { 'X-Api-Key': 'sk-live-77\r\nX-Evil: 1' },
    }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('POLLER_PERMANENT');
    expect((err as Error).message).toContain('HTTP_INVALID_REQUEST');
    expect((err as Error).message).not.toContain('sk-live-77');
    expect(s.requests).toHaveLength(0);
  });

  it('a cross-origin redirect drops the secret headers', async () => {
    const target = await serve((_req, res) => {
      res.writeHead(200);
      res.end('[]');
    }, '127.0.0.2');
    const origin = await serve((_req, res) => {
      res.writeHead(302, { location: `${target.url}/landing` });
      res.end();
    });
    await runKindTick(webhookPollerKind, {
      ...base,
      url: `${origin.url}/x`,
      allow_private_networks: true,
      headers: { Authorization: 'Bearer abc', 'X-Api-Key': 'k-1' },
    });
    expect(origin.requests[0]!.headers['x-api-key']).toBe('k-1');
    expect(target.requests[0]!.headers.authorization).toBeUndefined();
    expect(target.requests[0]!.headers['x-api-key']).toBeUndefined();
  });
});

describe('webhook_poll: sourceKey', () => {
  it('covers method, url, items_path, id_field and body, not headers, and hides query and body', () => {
    const cfg = {
      url: 'https://api.example.org/v1/events?api_key=sekrit',
      method: 'POST' as const,
      items_path: 'data',
      id_field: 'id',
      body: { token: 'body-secret' },
    };
    const key = webhookSourceKey(cfg);
    expect(key).toMatch(
      /^POST https:\/\/api\.example\.org\/v1\/events items_path="data" id_field="id" sha256:/,
    );
    expect(key).not.toContain('sekrit');
    expect(key).not.toContain('body-secret');
    for (const change of [
      { method: 'GET' as const },
      { url: 'https://api.example.org/v1/events?api_key=other' },
      { items_path: 'data.items' },
      { id_field: 'uuid' },
      { body: { token: 'x' } },
    ])
      expect(webhookSourceKey({ ...cfg, ...change })).not.toBe(key);
    expect(kindKey({ ...cfg, headers: { A: '1' } })).toBe(kindKey({ ...cfg, headers: { A: '2' } }));
  });

  it('is stored as a hash: a token in the URL path never reaches the state db', () => {
    const cfg = {
      url: 'https://api.example.org/tok-3e8d1f/items',
      method: 'GET' as const,
      items_path: '',
      id_field: 'id',
    };
    const stored = sourceKeyOf(webhookPollerKind, cfg);
    expect(stored).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(stored).toBe(hashSourceKey(`webhook_poll:${webhookSourceKey(cfg)}`));
  });
});
