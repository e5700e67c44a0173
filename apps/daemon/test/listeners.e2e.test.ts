// The Host and Origin rules of a real daemon's admin and metrics listeners.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { baseConfig, daemonScope } from './harness.js';

const scope = daemonScope();

interface Answer {
  status: number;
  body: string;
}

function send(url: string, headers: Record<string, string>, method = 'GET'): Promise<Answer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: u.pathname, method, headers, setHost: false },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** An HTTP/1.0 request, which may omit Host. */
function withoutHost(url: string, method = 'GET'): Promise<Answer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    let raw = '';
    socket.on('data', (d) => (raw += d.toString()));
    socket.on('end', () =>
      resolve({
        status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(raw)?.[1] ?? 0),
        body: raw.slice(raw.indexOf('\r\n\r\n') + 4),
      }),
    );
    socket.on('error', reject);
    socket.write(`${method} ${u.pathname} HTTP/1.0\r\nContent-Length: 0\r\n\r\n`);
  });
}

const codeOf = (a: Answer): string => (JSON.parse(a.body) as { error: { code: string } }).error.code;

describe('listeners of a real daemon', () => {
  it('metrics, healthz and readyz answer only a loopback or own-address Host', async () => {
    const { d } = await scope.boot(baseConfig({ agents: ['ops-agent'] }));
    const base = d.metricsUrl.replace(/\/metrics$/, '');
    const own = new URL(base).host;
    const ok = await send(`${base}/metrics`, { host: own });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('agent_id="ops-agent"');
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      expect((await send(`${base}${path}`, { host: own })).status).toBe(200);
      for (const refused of [
        await send(`${base}${path}`, { host: `rebind.example:${new URL(base).port}` }),
        await withoutHost(`${base}${path}`),
      ]) {
        expect(refused.status).toBe(403);
        expect(codeOf(refused)).toBe('HOST_NOT_ALLOWED');
        expect(refused.body).not.toContain('ops-agent');
      }
    }
  });

  it('the admin API refuses a request without Host and an https or other-port Origin', async () => {
    const { d } = await scope.boot(baseConfig());
    const own = new URL(d.adminUrl).host;
    const port = Number(new URL(d.adminUrl).port);
    const other = `127.0.0.1:${port === 65535 ? 65534 : port + 1}`;
    expect((await send(`${d.adminUrl}/admin/info`, { host: own, origin: `http://${own}` })).status).toBe(200);
    const cases: [Promise<Answer>, string][] = [
      [withoutHost(`${d.adminUrl}/admin/info`), 'ADMIN_HOST_NOT_LOOPBACK'],
      [send(`${d.adminUrl}/admin/info`, { host: own, origin: `https://${own}` }), 'ADMIN_CROSS_SITE'],
      [send(`${d.adminUrl}/admin/info`, { host: other, origin: `http://${other}` }), 'ADMIN_CROSS_SITE'],
    ];
    for (const [answer, code] of cases) {
      const a = await answer;
      expect(a.status).toBe(403);
      expect(codeOf(a)).toBe(code);
      expect(a.body).not.toContain('config_dir');
    }
  });
});
