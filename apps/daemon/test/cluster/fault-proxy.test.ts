// The fault proxy against a real echo server and the real local PostgreSQL.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { createPool, type Pool } from '@agent/pg';
import { testPgUrl } from '@agent/pg/testing';
import { sleep } from '@agent/timers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BLACKHOLE, PASS, RESET, latency, startFaultProxy, type FaultProxy } from './fault-proxy.js';

let echo: Server;
let echoPort = 0;
let proxy: FaultProxy | undefined;
const clients: Socket[] = [];

beforeAll(async () => {
  echo = createServer((s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => echo.close(() => r())));
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await proxy?.close();
  proxy = undefined;
});

interface Client {
  socket: Socket;
  received(): string;
  closed: Promise<string>;
}

/** A client whose bytes and close reason (`end`, an error code) are recorded. */
async function client(port: number): Promise<Client> {
  const socket = connect(port, '127.0.0.1');
  clients.push(socket);
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString()));
  let reason = 'end';
  socket.on('error', (e: NodeJS.ErrnoException) => (reason = e.code ?? e.message));
  const closed = new Promise<string>((r) => socket.once('close', () => r(reason)));
  await new Promise<void>((r, j) => {
    socket.once('connect', r);
    socket.once('error', j);
  });
  return { socket, received: () => data, closed };
}

/** How a connection that is reset at once (maybe before its connect event) ends. */
function closeReason(port: number): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  clients.push(socket);
  let reason = 'end';
  socket.on('error', (e: NodeJS.ErrnoException) => (reason = e.code ?? e.message));
  return new Promise((r) => socket.once('close', () => r(reason)));
}

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > ms) throw new Error('condition not met in time');
    await sleep(10);
  }
}

const proxyToEcho = (): Promise<FaultProxy> =>
  startFaultProxy({ target: { host: '127.0.0.1', port: echoPort } });

describe('fault proxy on an echo server', () => {
  it('pass forwards both ways and counts connections', async () => {
    proxy = await proxyToEcho();
    const c = await client(proxy.port);
    c.socket.write('hello');
    await until(() => c.received() === 'hello');
    expect(proxy.accepted).toBe(1);
    expect(proxy.open).toBe(1);
  });

  it("pass hands a peer's orderly close on as a close, not a reset", async () => {
    const bye = createServer((s) => s.end('bye'));
    await new Promise<void>((r) => bye.listen(0, '127.0.0.1', r));
    try {
      proxy = await startFaultProxy({
        target: { host: '127.0.0.1', port: (bye.address() as { port: number }).port },
      });
      const c = await client(proxy.port);
      expect(await c.closed).toBe('end');
      expect(c.received()).toBe('bye');
      await until(() => proxy!.open === 0);
    } finally {
      await new Promise<void>((r) => bye.close(() => r()));
    }
  });

  it('blackhole keeps the socket and drops bytes; the broken link is reset when it heals', async () => {
    proxy = await proxyToEcho();
    const c = await client(proxy.port);
    proxy.setMode(BLACKHOLE);
    c.socket.write('lost');
    await sleep(300);
    expect(c.received()).toBe('');
    expect(c.socket.destroyed).toBe(false);
    proxy.setMode(PASS);
    expect(await c.closed).toBe('ECONNRESET');
    const fresh = await client(proxy.port);
    fresh.socket.write('again');
    await until(() => fresh.received() === 'again');
  });

  it('reset destroys open connections and refuses new ones until the mode changes', async () => {
    proxy = await proxyToEcho();
    const c = await client(proxy.port);
    proxy.setMode(RESET);
    expect(await c.closed).toBe('ECONNRESET');
    expect(await closeReason(proxy.port)).toBe('ECONNRESET');
    proxy.setMode(PASS);
    const fresh = await client(proxy.port);
    fresh.socket.write('ok');
    await until(() => fresh.received() === 'ok');
    expect(proxy.accepted).toBe(3);
  });

  it('latency delays each direction and keeps the order of chunks', async () => {
    proxy = await proxyToEcho();
    proxy.setMode(latency(150));
    const c = await client(proxy.port);
    const t0 = performance.now();
    c.socket.write('a');
    c.socket.write('b');
    c.socket.write('c');
    await until(() => c.received() === 'abc');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
  });

  it('close ends every connection and stops listening', async () => {
    proxy = await proxyToEcho();
    const c = await client(proxy.port);
    const port = proxy.port;
    await proxy.close();
    proxy = undefined;
    expect(['end', 'ECONNRESET']).toContain(await c.closed);
    await expect(client(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});

/** The query's answer, or `timeout` when the client gives up first. */
async function queryWithin(p: Pool, ms: number): Promise<string> {
  const ctl = new AbortController();
  const query = p.query<{ one: number }>('SELECT 1 AS one').then(
    (r) => `rows ${r.rows[0]?.one}`,
    (e: Error) => `error ${e.message}`,
  );
  const answer = await Promise.race([query, sleep(ms, ctl.signal).then(() => 'timeout')]);
  ctl.abort();
  return answer;
}

describe('fault proxy in front of PostgreSQL', () => {
  let pool: Pool | undefined;
  afterEach(async () => {
    proxy?.setMode(RESET);
    await pool?.end().catch(() => {});
    pool = undefined;
  });

  /** A pool on the test database through the proxy, with one session already open. */
  async function poolThroughProxy(): Promise<Pool> {
    const target = new URL(testPgUrl());
    proxy = await startFaultProxy({ target: { host: target.hostname, port: Number(target.port || 5432) } });
    target.host = `127.0.0.1:${proxy.port}`;
    pool = createPool({ url: target.toString(), applicationName: 'fault proxy test', max: 1 });
    pool.on('error', () => {});
    return pool;
  }

  it('a query passes, hangs while blackholed, and fails fast on reset', async () => {
    const p = await poolThroughProxy();
    expect(await queryWithin(p, 5000)).toBe('rows 1');
    proxy!.setMode(BLACKHOLE);
    expect(await queryWithin(p, 700)).toBe('timeout');
    const t0 = performance.now();
    const hung = queryWithin(p, 5000);
    proxy!.setMode(RESET);
    expect(await hung).toMatch(/^error /);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(await queryWithin(p, 1000)).toMatch(/^error /);
    proxy!.setMode(PASS);
    expect(await queryWithin(p, 5000)).toBe('rows 1');
  });
});
