import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { adminRequest, CliError, daemonDownMessage, type AdminTarget } from './admin-client.js';

// The admin client against a real HTTP server on a loopback port, answering as each test says.
let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

async function serve(
  answer: (res: ServerResponse, seen: Seen) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const s = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(s);
      answer(res, s);
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

const target = (url: string, token: string | null = null): AdminTarget => ({ url, token, from: 'flag' });

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function failure(p: Promise<unknown>): Promise<CliError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('adminRequest', () => {
  it('returns the JSON answer; sends accept and the bearer token', async () => {
    const { url, seen } = await serve((res) => json(res, 200, { jobs: [{ id: 'news' }] }));
    expect(await adminRequest(target(url, 's3cret'), 'GET', '/admin/pollers')).toEqual({
      jobs: [{ id: 'news' }],
    });
    expect(seen).toMatchObject([
      {
        method: 'GET',
        url: '/admin/pollers',
        headers: { accept: 'application/json', authorization: 'Bearer s3cret' },
        body: '',
      },
    ]);
  });

  it('sends no authorization header without a token', async () => {
    const { url, seen } = await serve((res) => json(res, 200, {}));
    await adminRequest(target(url), 'GET', '/admin/info');
    expect(seen[0]!.headers.authorization).toBeUndefined();
  });

  it('POSTs a JSON body whole, its length counted in bytes', async () => {
    const { url, seen } = await serve((res, s) => json(res, 200, { echoed: JSON.parse(s.body) as unknown }));
    const body = { confirm: true, note: 'café ✓' };
    expect(await adminRequest(target(url), 'POST', '/admin/pollers/a%20b/reset', { body })).toEqual({
      echoed: body,
    });
    expect(seen[0]).toMatchObject({
      method: 'POST',
      url: '/admin/pollers/a%20b/reset',
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(JSON.stringify(body))),
      },
    });
  });

  it('an error answer is CLI_ADMIN_ERROR with the API message, status and code', async () => {
    const { url } = await serve((res) =>
      json(res, 404, { error: { code: 'ADMIN_UNKNOWN_JOB', message: 'no job "x"' } }),
    );
    const err = await failure(adminRequest(target(url), 'GET', '/admin/pollers/x'));
    expect(err).toMatchObject({
      code: 'CLI_ADMIN_ERROR',
      message: 'no job "x"',
      status: 404,
      apiCode: 'ADMIN_UNKNOWN_JOB',
    });
  });

  it('an error answer without a message says the HTTP status', async () => {
    const { url } = await serve((res) => json(res, 503, {}));
    const err = await failure(adminRequest(target(url), 'GET', '/admin/pollers'));
    expect(err).toMatchObject({ code: 'CLI_ADMIN_ERROR', message: 'HTTP 503', status: 503 });
  });

  it('an answer that is not JSON is CLI_BAD_ANSWER', async () => {
    const { url } = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>hello</html>');
    });
    const err = await failure(adminRequest(target(url), 'GET', '/admin/pollers'));
    expect(err.code).toBe('CLI_BAD_ANSWER');
    expect(err.message).toBe(
      `unexpected answer from ${url}/admin/pollers (HTTP 200); is this the agent admin server?`,
    );
  });

  it('a server that never answers is CLI_TIMEOUT after timeoutMs', async () => {
    const { url } = await serve(() => {});
    const err = await failure(adminRequest(target(url), 'GET', '/admin/pollers', { timeoutMs: 200 }));
    expect(err).toMatchObject({
      code: 'CLI_TIMEOUT',
      message: `the daemon did not answer within 0.2 s (${url})`,
    });
  });

  it('an answer cut off mid-body is CLI_DAEMON_DOWN, not a hang or a parse error', async () => {
    const { url } = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"jobs": [');
      setImmediate(() => res.socket?.destroy());
    });
    const err = await failure(adminRequest(target(url), 'GET', '/admin/pollers'));
    expect(err.code).toBe('CLI_DAEMON_DOWN');
  });

  it('nothing listening is CLI_DAEMON_DOWN with the one-line message', async () => {
    const { url } = await serve(() => {});
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
    const err = await failure(adminRequest(target(url), 'GET', '/admin/pollers'));
    expect(err).toMatchObject({ code: 'CLI_DAEMON_DOWN', message: daemonDownMessage(url) });
  });
});
