// The Host and Origin rules of both listeners, through `app.request()` and through real served listeners.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { createMemoryLogger } from '@agent/log';
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startPollers, type PollerFixture } from '../test/pollers.js';
import { buildAdminApp } from './app.js';
import { buildMetricsApp } from './metrics.js';
import { serveAdmin, serveApp, type ServedApp } from './serve.js';

let fixtures: PollerFixture[] = [];
let served: ServedApp[] = [];
afterEach(async () => {
  for (const s of served) await s.close();
  for (const f of fixtures) await f.service.stop();
  served = [];
  fixtures = [];
});

async function adminApp() {
  const f = await startPollers();
  fixtures.push(f);
  const app = buildAdminApp({
    pollers: f.spy,
    reloadPollers: async () => ({ add: [], replace: [], remove: [], keep: [], rejected: [] }),
    reloadCredentials: async () => ({ channels: [], pollers: true }),
    logger: createMemoryLogger(),
  });
  return { f, app };
}

function metricsApp(hosts?: string[]) {
  const registry = new Registry();
  // Series labelled with ids: what a DNS-rebinding page must not read.
  new Counter({ name: 'poller_ticks_total', help: 'x', labelNames: ['job_id'], registers: [registry] })
    .labels('secret-project-sync')
    .inc();
  return buildMetricsApp(registry, hosts ? { hosts } : {});
}

interface Answer {
  status: number;
  body: string;
}

/** A request with exactly these headers (fetch would set Host itself). */
function send(
  s: ServedApp,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  host = s.host,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port: s.port, path, method, headers, setHost: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** HTTP/1.0 allows a request without Host; Node's server passes it on. */
function withoutHost(s: ServedApp, path: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(s.port, s.host);
    let raw = '';
    socket.on('data', (d) => (raw += d.toString()));
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(raw)?.[1] ?? 0);
      resolve({ status, body: raw.slice(raw.indexOf('\r\n\r\n') + 4) });
    });
    socket.on('error', reject);
    socket.write(`${method} ${path} HTTP/1.0\r\nContent-Length: 0\r\n\r\n`);
  });
}

const codeOf = (body: string): string => (JSON.parse(body) as { error: { code: string } }).error.code;

describe('admin API: Host and Origin', () => {
  it('a request without a Host header is refused and changes nothing', async () => {
    const { f, app } = await adminApp();
    const res = await app.request('/admin/pollers/alpha/pause', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      error: {
        code: 'ADMIN_HOST_NOT_LOOPBACK',
        message:
          'refused: the request has no Host header; call the admin API at 127.0.0.1, localhost or [::1]',
      },
    });
    expect(f.calls).toEqual([]);
  });

  it.each([
    ['https on the same host and port', 'https://127.0.0.1:9091'],
    ['no port (port 80)', 'http://127.0.0.1'],
    ['another loopback name', 'http://localhost:9091'],
    ['a path after the origin', 'http://127.0.0.1:9091/x'],
  ])('Origin with %s is another origin', async (_name, origin) => {
    const { f, app } = await adminApp();
    const res = await app.request('/admin/pollers/alpha/pause', {
      method: 'POST',
      headers: { host: '127.0.0.1:9091', origin },
    });
    expect(res.status).toBe(403);
    expect(codeOf(await res.text())).toBe('ADMIN_CROSS_SITE');
    expect(f.calls).toEqual([]);
  });

  it('the exact own origin is accepted', async () => {
    const { f, app } = await adminApp();
    const res = await app.request('/admin/pollers/alpha/pause', {
      method: 'POST',
      headers: { host: '127.0.0.1:9091', origin: 'http://127.0.0.1:9091' },
    });
    expect(res.status).toBe(200);
    expect(f.calls).toEqual(['pause']);
  });

  it('through a served listener: no Host, a foreign Host, https and another port are refused', async () => {
    const { f, app } = await adminApp();
    const s = await serveAdmin(app, '127.0.0.1:0');
    served.push(s);
    const own = `127.0.0.1:${s.port}`;
    const other = `127.0.0.1:${s.port === 65535 ? 65534 : s.port + 1}`;

    expect((await send(s, '/admin/pollers', { host: own })).status).toBe(200);
    expect((await send(s, '/admin/pollers', { host: `localhost:${s.port}` })).status).toBe(200);
    const accepted = await send(
      s,
      '/admin/pollers/alpha/pause',
      { host: own, origin: `http://${own}` },
      'POST',
    );
    expect(accepted.status).toBe(200);
    expect(f.calls).toEqual(['list', 'list', 'pause']);

    const refusals: [Promise<Answer>, string][] = [
      [withoutHost(s, '/admin/pollers/alpha/resume', 'POST'), 'ADMIN_HOST_NOT_LOOPBACK'],
      [send(s, '/admin/pollers', { host: `evil.example:${s.port}` }), 'ADMIN_HOST_NOT_LOOPBACK'],
      [
        send(s, '/admin/pollers/alpha/resume', { host: own, origin: `https://${own}` }, 'POST'),
        'ADMIN_CROSS_SITE',
      ],
      // Origin and Host agree, but neither is the port this listener serves: another server's page.
      [
        send(s, '/admin/pollers/alpha/resume', { host: other, origin: `http://${other}` }, 'POST'),
        'ADMIN_CROSS_SITE',
      ],
    ];
    for (const [answer, code] of refusals) {
      const a = await answer;
      expect(a.status).toBe(403);
      expect(codeOf(a.body)).toBe(code);
    }
    expect(f.calls).toEqual(['list', 'list', 'pause']);
  });
});

describe('metrics listener: Host', () => {
  it.each(['/metrics', '/healthz', '/readyz'])(
    '%s without a Host, or with a foreign one, is refused',
    async (path) => {
      const app = metricsApp();
      const cases: Record<string, string>[] = [
        {},
        { host: 'evil.example:9090' },
        { host: '127.0.0.1.nip.io:9090' },
      ];
      for (const headers of cases) {
        const res = await app.request(path, { headers });
        expect(res.status).toBe(403);
        const body = await res.text();
        expect(codeOf(body)).toBe('HOST_NOT_ALLOWED');
        expect(body).not.toContain('secret-project-sync');
      }
      for (const host of ['127.0.0.1:9090', 'localhost:9090', '[::1]:9090', 'localhost'])
        expect((await app.request(path, { headers: { host } })).status).toBe(200);
    },
  );

  it('a configured listen name is the listener’s own', async () => {
    const app = metricsApp(['metrics.internal']);
    expect((await app.request('/metrics', { headers: { host: 'metrics.internal:9090' } })).status).toBe(200);
    expect((await app.request('/metrics', { headers: { host: 'other.internal:9090' } })).status).toBe(403);
  });

  it('through a served listener: loopback names and its own address only', async () => {
    // 127.0.0.2 is not a loopback *name*: only its being the listener's own address lets it in.
    const s = await serveApp(metricsApp(), { host: '127.0.0.2', port: 0 });
    served.push(s);
    const ok = await send(s, '/metrics', { host: `127.0.0.2:${s.port}` });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('secret-project-sync');
    expect((await send(s, '/healthz', { host: `localhost:${s.port}` })).status).toBe(200);
    for (const answer of [
      send(s, '/metrics', { host: `127.0.0.3:${s.port}` }),
      send(s, '/metrics', { host: `rebind.example:${s.port}` }),
      withoutHost(s, '/metrics'),
    ]) {
      const a = await answer;
      expect(a.status).toBe(403);
      expect(codeOf(a.body)).toBe('HOST_NOT_ALLOWED');
      expect(a.body).not.toContain('secret-project-sync');
    }
  });
});
