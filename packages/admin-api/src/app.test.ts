import { createMemoryLogger } from '@agent/log';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { createPostgresStateStore } from '@agent/poller-runtime/postgres';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SECRET, startPollers, type ClusterFixtureOptions, type PollerFixture } from '../test/pollers.js';
import { buildAdminApp, type AdminAppOptions } from './app.js';
import type { CredentialsReloadResult } from './wire.js';
import { ADMIN_ERROR_CODES } from './errors.js';
import { ADMIN_ROUTES } from './routes.js';
import { serveAdmin } from './serve.js';

let fixtures: PollerFixture[] = [];
afterEach(async () => {
  for (const f of fixtures) await f.service.stop();
  fixtures = [];
});

const PLAN = { add: ['gamma'], replace: [], remove: [], keep: ['alpha', 'beta'], rejected: [] };

async function setup(over: Partial<AdminAppOptions> = {}) {
  const f = await startPollers();
  fixtures.push(f);
  const reloads = { pollers: 0, credentials: 0 };
  const logger = createMemoryLogger();
  const app = buildAdminApp({
    pollers: f.spy,
    reloadPollers: async () => {
      reloads.pollers++;
      return PLAN;
    },
    reloadCredentials: async (): Promise<CredentialsReloadResult> => {
      reloads.credentials++;
      return { channels: ['chat_a'], pollers: true };
    },
    redact: (t) => t.split(SECRET).join('[redacted]'),
    logger,
    ...over,
  });
  const cli = { host: '127.0.0.1:9091' };
  const get = (path: string, headers: Record<string, string> = {}) =>
    app.request(path, { headers: { ...cli, ...headers } });
  const post = (path: string, body?: unknown, headers: Record<string, string> = {}) =>
    app.request(path, {
      method: 'POST',
      headers: {
        ...cli,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  return { f, app, reloads, logger, get, post };
}

async function errorOf(res: Response): Promise<{ code: string; message: string }> {
  const body = (await res.json()) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  return body.error;
}

describe('admin API: endpoints', () => {
  it('GET /admin/pollers lists every job', async () => {
    const { get } = await setup();
    const res = await get('/admin/pollers');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { jobs: { id: string; paused: boolean; schedule: string }[] };
    expect(body.jobs.map((j) => j.id)).toEqual(['alpha', 'beta']);
    expect(body.jobs[0]).toMatchObject({
      kind: 'counter',
      agent: 'assistant',
      schedule: 'every 60s',
      paused: false,
    });
  });

  it('GET /admin/pollers on a single host sends no holder fields', async () => {
    const { get } = await setup();
    const body = (await (await get('/admin/pollers')).json()) as { jobs: object[] };
    for (const job of body.jobs) {
      expect(job).not.toHaveProperty('holder');
      expect(job).not.toHaveProperty('lease_expires_at');
    }
  });

  it('GET /admin/pollers/:id shows one job with secrets redacted', async () => {
    const { get } = await setup();
    const res = await get('/admin/pollers/alpha');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain(SECRET);
    const body = JSON.parse(text);
    expect(body).toMatchObject({ id: 'alpha', cursor: { present: false }, lease: null });
    expect(body.config.api_key).toBe('[redacted]');
    expect(body.config.headers).toEqual({ Authorization: '[redacted]', Accept: '[redacted]' });
    expect(body.config.source).toBe('https://example.test/alpha?key=[redacted]');
    expect(body.config.message_template).toBe('New: {title}');
  });

  it('POST run ticks once and reports counts; pause, resume and reset change the job', async () => {
    const { f, get, post } = await setup();
    f.items = ['1', '2'];
    let res = await post('/admin/pollers/alpha/run');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok', items_seen: 2, items_dispatched: 0 });
    f.items = ['1', '2', '3'];
    res = await post('/admin/pollers/alpha/run', {});
    expect(await res.json()).toMatchObject({ status: 'ok', items_seen: 1, items_dispatched: 1 });
    expect(f.dispatcher.texts()).toEqual(['New: item 3']);

    res = await post('/admin/pollers/alpha/pause');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 'alpha', paused: true, next_run_at: null });
    res = await post('/admin/pollers/alpha/resume');
    expect(await res.json()).toMatchObject({ id: 'alpha', paused: false });

    res = await post('/admin/pollers/alpha/reset', { confirm: true });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 'alpha', consecutive_errors: 0 });
    const shown = (await (await get('/admin/pollers/alpha')).json()) as { baselined: boolean };
    expect(shown.baselined).toBe(false);
  });

  it('reset without {"confirm": true} is 400 and changes nothing', async () => {
    const { f, post } = await setup();
    for (const body of [undefined, {}, { confirm: 'yes' }]) {
      const res = await post('/admin/pollers/alpha/reset', body);
      expect(res.status).toBe(400);
      expect((await errorOf(res)).code).toBe('ADMIN_CONFIRM_REQUIRED');
    }
    expect(f.calls).not.toContain('reset');
  });

  it('POST /admin/pollers/reload returns the plan with rejected jobs', async () => {
    const { post, reloads } = await setup();
    const res = await post('/admin/pollers/reload');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(PLAN);
    expect(reloads.pollers).toBe(1);
  });

  it('POST /admin/credentials/reload returns what was rebuilt, also with the subsystem off', async () => {
    const { post, reloads } = await setup({ pollers: null });
    const res = await post('/admin/credentials/reload');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ channels: ['chat_a'], pollers: true });
    expect(reloads.credentials).toBe(1);
  });

  it('GET /admin/info answers who the daemon is, also with the subsystem off; 404 without the callback', async () => {
    const info = {
      version: '1.2.3',
      pid: 42,
      started_at: '2026-01-01T00:00:00.000Z',
      config_dir: '/srv/agent/config',
      data_dir: '/srv/agent/data',
      broker: { kind: 'local' as const, socket: '/srv/agent/data/broker.sock' },
    };
    const { get, post } = await setup({ pollers: null, info: () => info });
    const res = await get('/admin/info');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(info);
    const wrong = await post('/admin/info');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
    const none = await (await setup()).get('/admin/info');
    expect(none.status).toBe(404);
    expect((await errorOf(none)).code).toBe('ADMIN_NOT_FOUND');
  });

  it('every /admin/pollers* path is 404 while the subsystem is off', async () => {
    const { get, post, reloads } = await setup({ pollers: () => null });
    for (const res of [
      await get('/admin/pollers'),
      await get('/admin/pollers/alpha'),
      await post('/admin/pollers/alpha/run'),
      await post('/admin/pollers/reload'),
      await post('/admin/pollers'),
    ]) {
      expect(res.status).toBe(404);
      expect((await errorOf(res)).code).toBe('ADMIN_NOT_FOUND');
    }
    expect(reloads.pollers).toBe(0);
  });
});

describe('admin API: errors', () => {
  it('unknown job is 404 ADMIN_UNKNOWN_JOB on every job endpoint', async () => {
    const { get, post } = await setup();
    for (const res of [
      await get('/admin/pollers/nope'),
      await post('/admin/pollers/nope/run'),
      await post('/admin/pollers/nope/pause'),
      await post('/admin/pollers/nope/resume'),
      await post('/admin/pollers/nope/reset', { confirm: true }),
    ]) {
      expect(res.status).toBe(404);
      expect(await errorOf(res)).toEqual({
        code: 'ADMIN_UNKNOWN_JOB',
        message: 'no poller job "nope"; list the jobs with agent pollers list',
      });
    }
  });

  it('unknown route is 404 ADMIN_NOT_FOUND', async () => {
    const { get, post } = await setup();
    for (const res of [
      await get('/admin'),
      await get('/admin/pollers/a/b/c'),
      await post('/admin/pollers/alpha/stop'),
    ]) {
      expect(res.status).toBe(404);
      expect((await errorOf(res)).code).toBe('ADMIN_NOT_FOUND');
    }
  });

  it('wrong method is 405 with Allow', async () => {
    const { app, get, post } = await setup();
    let res = await post('/admin/pollers');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect((await errorOf(res)).code).toBe('ADMIN_METHOD_NOT_ALLOWED');
    res = await get('/admin/pollers/alpha/run');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    res = await get('/admin/credentials/reload');
    expect(res.headers.get('allow')).toBe('POST');
    res = await app.request('/admin/pollers/reload', { method: 'DELETE', headers: { host: '127.0.0.1' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, GET, HEAD');
    res = await app.request('/admin/pollers', { method: 'HEAD', headers: { host: '127.0.0.1' } });
    expect(res.status).toBe(200);
  });

  it('bad JSON, non-object JSON and oversized bodies are refused before the service runs', async () => {
    const { f, post } = await setup();
    let res = await post('/admin/pollers/alpha/pause', '{not json');
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('ADMIN_BAD_REQUEST');
    res = await post('/admin/pollers/alpha/pause', '[1]');
    expect(res.status).toBe(400);
    res = await post('/admin/pollers/alpha/pause', JSON.stringify({ pad: 'x'.repeat(70_000) }));
    expect(res.status).toBe(413);
    expect((await errorOf(res)).code).toBe('ADMIN_BODY_TOO_LARGE');
    expect(f.calls).toEqual([]);
  });

  it('409 while the poller service is stopping', async () => {
    const { f, post } = await setup();
    await f.service.stop();
    const res = await post('/admin/pollers/alpha/run');
    expect(res.status).toBe(409);
    expect((await errorOf(res)).code).toBe('ADMIN_CONFLICT');
  });

  it('500 never leaks the reason, which goes to the log (redacted)', async () => {
    const { post, logger } = await setup({
      reloadPollers: async () => {
        throw new Error(`database at /var/lib/secret.db failed with key ${SECRET}`);
      },
    });
    const res = await post('/admin/pollers/reload');
    expect(res.status).toBe(500);
    const e = await errorOf(res);
    expect(e).toEqual({ code: 'ADMIN_INTERNAL', message: 'internal error; see the daemon log' });
    const rec = logger.find('admin request failed')[0];
    expect(String(rec?.fields.reason)).toContain('[redacted]');
    expect(String(rec?.fields.reason)).not.toContain(SECRET);
  });

  it('a callback may choose its answer by throwing an AdminError', async () => {
    const { AdminError } = await import('./errors.js');
    const { post } = await setup({
      reloadPollers: async () => {
        throw new AdminError('ADMIN_BAD_REQUEST', 'config/runtime.yaml is invalid');
      },
    });
    const res = await post('/admin/pollers/reload');
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toEqual({
      code: 'ADMIN_BAD_REQUEST',
      message: 'config/runtime.yaml is invalid',
    });
  });

  it.each([
    ['', false],
    ['?dry_run=1', true],
    ['?dry_run=true', true],
    ['?dry_run', true],
    ['?dry_run=0', false],
    ['?dry_run=false', false],
  ])('POST /admin/pollers/reload%s asks for dryRun=%s', async (query, dryRun) => {
    const asked: boolean[] = [];
    const { post } = await setup({
      reloadPollers: async (o) => {
        asked.push(o.dryRun);
        return PLAN;
      },
    });
    const res = await post(`/admin/pollers/reload${query}`);
    expect(res.status).toBe(200);
    expect(asked).toEqual([dryRun]);
  });

  it('a dry_run that is not a yes or a no is refused before anything runs', async () => {
    const { post, reloads } = await setup();
    const res = await post('/admin/pollers/reload?dry_run=maybe');
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toEqual({
      code: 'ADMIN_BAD_REQUEST',
      message: 'dry_run must be 1 or 0 (true or false), not "maybe"',
    });
    expect(reloads.pollers).toBe(0);
  });

  it('every documented status code has a code in the error table', () => {
    const statuses = new Set(Object.values(ADMIN_ERROR_CODES).map((e) => e.status));
    for (const r of ADMIN_ROUTES)
      for (const resp of r.responses) if (resp.status !== 200) expect(statuses).toContain(resp.status);
  });
});

describe('admin API: refusals change nothing', () => {
  const TOKEN = 'tok-3f9a1c2b';
  type Case = [
    name: string,
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string>,
    body?: string,
  ];
  const refused: Case[] = [
    ['Host evil.example (DNS rebinding)', 'POST', '/admin/pollers/alpha/pause', { host: 'evil.example' }],
    ['Host 127.0.0.1.nip.io', 'POST', '/admin/pollers/alpha/pause', { host: '127.0.0.1.nip.io:9091' }],
    ['Host 10.0.0.5', 'GET', '/admin/pollers', { host: '10.0.0.5:9091' }],
    ['Origin https://evil.example', 'POST', '/admin/pollers/alpha/pause', { origin: 'https://evil.example' }],
    ['Origin null', 'POST', '/admin/pollers/alpha/reset', { origin: 'null' }, '{"confirm":true}'],
    [
      'Origin of another loopback port',
      'POST',
      '/admin/pollers/alpha/pause',
      { origin: 'http://127.0.0.1:8080' },
    ],
    ['Sec-Fetch-Site cross-site', 'POST', '/admin/pollers/alpha/pause', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site same-site', 'POST', '/admin/pollers/alpha/run', { 'sec-fetch-site': 'same-site' }],
    [
      'form post text/plain',
      'POST',
      '/admin/pollers/alpha/reset',
      { 'content-type': 'text/plain' },
      '{"confirm":true}',
    ],
    [
      'form post urlencoded',
      'POST',
      '/admin/pollers/alpha/pause',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'a=1',
    ],
    [
      'multipart with empty body',
      'POST',
      '/admin/pollers/alpha/pause',
      { 'content-type': 'multipart/form-data' },
    ],
    ['body without Content-Type', 'POST', '/admin/pollers/alpha/pause', {}, '{}'],
    ['missing token', 'POST', '/admin/pollers/alpha/pause', {}],
    ['wrong token', 'POST', '/admin/pollers/alpha/pause', { authorization: 'Bearer nope' }],
    ['token without Bearer', 'POST', '/admin/pollers/alpha/pause', { authorization: TOKEN }],
    ['missing token on reload', 'POST', '/admin/pollers/reload', {}],
    ['missing token on credentials', 'POST', '/admin/credentials/reload', {}],
    ['missing token on list', 'GET', '/admin/pollers', {}],
  ];

  it.each(refused)('%s is refused and no state changes', async (_name, method, path, headers, body) => {
    const { f, app, reloads } = await setup({ token: TOKEN });
    const needsToken = !('authorization' in headers) && !_name.startsWith('missing token');
    const before = JSON.stringify(await f.service.list());
    const res = await app.request(path, {
      method,
      headers: {
        host: '127.0.0.1:9091',
        ...(needsToken ? { authorization: `Bearer ${TOKEN}` } : {}),
        ...headers,
      },
      ...(body === undefined ? {} : { body }),
    });
    expect([401, 403]).toContain(res.status);
    const e = await errorOf(res);
    expect(e.code).toMatch(/^ADMIN_(HOST_NOT_LOOPBACK|CROSS_SITE|CONTENT_TYPE|UNAUTHORIZED)$/);
    if (res.status === 401) expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(f.calls).toEqual([]);
    expect(reloads).toEqual({ pollers: 0, credentials: 0 });
    expect(JSON.stringify(await f.service.list())).toBe(before);
  });

  it.each([
    ['127.0.0.1:9091', {}],
    ['localhost:9091', {}],
    ['[::1]:9091', {}],
    ['localhost', { origin: 'http://localhost', 'sec-fetch-site': 'same-origin' }],
  ] as [string, Record<string, string>][])(
    'a CLI-like request to Host %s is accepted',
    async (host, extra) => {
      const { f, app } = await setup({ token: TOKEN });
      const res = await app.request('/admin/pollers/alpha/pause', {
        method: 'POST',
        headers: { host, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...extra },
        body: '{}',
      });
      expect(res.status).toBe(200);
      expect(f.calls).toEqual(['pause']);
      expect((await f.service.show('alpha')).paused).toBe(true);
    },
  );
});

describe('serveAdmin', () => {
  it('refuses a non-loopback listen address', async () => {
    const { app } = await setup();
    for (const listen of ['0.0.0.0:9091', '192.168.1.2:9091', '[::]:9091', 'example.com:9091'])
      await expect(serveAdmin(app, listen)).rejects.toMatchObject({ code: 'ADMIN_NOT_LOOPBACK' });
  });

  it('a port in use names the setting and the likely cause', async () => {
    const { app } = await setup();
    const first = await serveAdmin(app, '127.0.0.1:0');
    try {
      const err = await serveAdmin(app, `127.0.0.1:${first.port}`).then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(err?.code).toBe('EADDRINUSE');
      expect(err?.message).toBe(
        `cannot listen on 127.0.0.1:${first.port} (runtime.yaml admin.listen): the address is already in use; another daemon running? stop it, or change runtime.yaml admin.listen`,
      );
    } finally {
      await first.close();
    }
  });

  it('serves on 127.0.0.1 and answers a real HTTP client', async () => {
    const { app } = await setup();
    const served = await serveAdmin(app, '127.0.0.1:0');
    try {
      const res = await fetch(`${served.url}/admin/pollers`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { jobs: unknown[] };
      expect(body.jobs).toHaveLength(2);
      const refused = await fetch(`${served.url}/admin/pollers/alpha/pause`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'x',
      });
      expect(refused.status).toBe(403);
    } finally {
      await served.close();
    }
  });
});

describe('admin API: pollers in cluster mode', () => {
  let scratch: ScratchSchema | null = null;
  afterEach(async () => {
    for (const f of fixtures) await f.service.stop();
    fixtures = [];
    await scratch?.drop();
    scratch = null;
  });
  const daemon = async (holderId: string, gate: Promise<void> | null) => {
    scratch ??= await scratchSchema('adm');
    const store = await createPostgresStateStore({ pool: scratch.openPool(), schema: scratch.schema });
    const cluster: ClusterFixtureOptions = { holderId, store };
    const f = await startPollers(cluster);
    f.gate = gate;
    fixtures.push(f);
    return f;
  };

  it('any daemon lists and shows every job of the cluster with its holder and lease expiry', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Daemon A ticks both jobs (their first ticks wait on the gate); daemon B answers the operator.
    const a = await daemon('host-a#1', gate);
    await vi.waitFor(
      async () => expect((await a.service.list()).map((j) => j.holder)).toEqual(['host-a#1', 'host-a#1']),
      { timeout: 10_000 },
    );
    const b = await daemon('host-b#1', null);
    const { get } = await setup({ pollers: b.spy });

    const list = (await (await get('/admin/pollers')).json()) as {
      jobs: { id: string; holder: string | null; lease_expires_at: string | null }[];
    };
    expect(list.jobs.map((j) => [j.id, j.holder])).toEqual([
      ['alpha', 'host-a#1'],
      ['beta', 'host-a#1'],
    ]);
    for (const j of list.jobs) expect(Date.parse(j.lease_expires_at!)).toBeGreaterThan(Date.now());
    const shown = (await (await get('/admin/pollers/alpha')).json()) as { lease_expires_at: string };
    expect(shown).toMatchObject({
      holder: 'host-a#1',
      lease_expires_at: expect.any(String),
      lease: { holder: 'host-a#1', epoch: expect.any(Number), expires_at: shown.lease_expires_at },
    });

    release();
    await a.service.idle();
    const after = (await (await get('/admin/pollers')).json()) as typeof list;
    expect(after.jobs.map((j) => [j.holder, j.lease_expires_at])).toEqual([
      [null, null],
      [null, null],
    ]);
  });
});
