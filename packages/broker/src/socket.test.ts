import { chmod, lstat, mkdir, stat, symlink, writeFile, readFile } from 'node:fs/promises';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { createMemoryLogger, silentLogger } from '@agent/log';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { collector, privateDir, rejectionOf, uniqueSubject } from '../test/helpers.js';
import {
  LISTEN_SCRIPT,
  RAW_REQUEST_SCRIPT,
  RAW_RESPONDER_SCRIPT,
  spawnNodeScript,
  waitForExit,
  waitForLine,
} from '../test/processes.js';
import {
  MAX_FRAME_BYTES,
  connectBroker,
  connectLocalBroker,
  createLocalBroker,
  resolveBrokerConfig,
  type LocalBroker,
} from './index.js';
import { prepareSocketPath } from './socket-path.js';

let tmp: { dir: string; remove(): Promise<void> };
let socketPath: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeEach(async () => {
  tmp = await privateDir();
  socketPath = join(tmp.dir, 'broker.sock');
});
afterEach(async () => {
  vi.useRealTimers();
  for (const c of cleanups.splice(0).toReversed()) await c();
  await tmp.remove();
});

async function daemon(logger = silentLogger): Promise<LocalBroker> {
  const b = await createLocalBroker({ socketPath, logger });
  cleanups.push(() => b.close());
  return b;
}

/** Leaves a socket file behind with nobody listening, as a daemon killed with SIGKILL does. */
async function staleSocket(): Promise<void> {
  const child = spawnNodeScript(LISTEN_SCRIPT, { BROKER_SOCKET: socketPath });
  await waitForLine(child, (l) => l === 'listening');
  child.kill('SIGKILL');
  await waitForExit(child);
  expect((await lstat(socketPath)).isSocket()).toBe(true);
}

/** A raw frame-protocol connection: write text, read parsed frames. */
async function rawConnection(): Promise<{
  sock: Socket;
  frames: Array<Record<string, unknown>>;
  next(n: number): Promise<void>;
}> {
  const sock = createConnection({ path: socketPath });
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  cleanups.push(async () => sock.destroy());
  const frames: Array<Record<string, unknown>> = [];
  let buf = '';
  sock.on('data', (chunk: Buffer) => {
    buf += chunk.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      frames.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      buf = buf.slice(nl + 1);
    }
  });
  return {
    sock,
    frames,
    next: (n) => vi.waitFor(() => expect(frames.length).toBeGreaterThanOrEqual(n), { timeout: 3000 }),
  };
}

describe('local broker socket: security', () => {
  it('creates the socket with mode 0600, owned by the current user, and removes it on close', async () => {
    const b = await createLocalBroker({ socketPath, logger: silentLogger });
    expect(b.socketPath).toBe(socketPath);
    const st = await lstat(socketPath);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.uid).toBe(process.getuid?.());
    await b.close();
    await expect(lstat(socketPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('creates a missing socket directory as private (0700)', async () => {
    const nested = join(tmp.dir, 'data');
    socketPath = join(nested, 'broker.sock');
    await daemon();
    expect((await stat(nested)).mode & 0o777).toBe(0o700);
  });

  it.each(['770', '707', '777'])(
    'refuses a socket directory with mode %s (writable by others)',
    async (mode) => {
      await chmod(tmp.dir, parseInt(mode, 8));
      const err = await rejectionOf(createLocalBroker({ socketPath, logger: silentLogger }));
      expect(err.code).toBe('BROKER_SOCKET_UNSAFE');
      expect(err.message).toContain('chmod go-w');
      await expect(lstat(socketPath)).rejects.toMatchObject({ code: 'ENOENT' });
    },
  );

  it('refuses a socket directory reached through a symlink', async () => {
    const real = join(tmp.dir, 'real');
    await mkdir(real, { mode: 0o700 });
    await symlink(real, join(tmp.dir, 'link'));
    const err = await rejectionOf(
      createLocalBroker({ socketPath: join(tmp.dir, 'link', 'b.sock'), logger: silentLogger }),
    );
    expect(err.code).toBe('BROKER_SOCKET_UNSAFE');
  });

  it('refuses a directory or socket owned by another user', async () => {
    const otherUid = (process.getuid?.() ?? 0) + 4242;
    const err = await rejectionOf(prepareSocketPath(socketPath, silentLogger, otherUid));
    expect(err.code).toBe('BROKER_SOCKET_UNSAFE');
    expect(err.message).toContain('another user');
  });

  it('refuses an existing file that is not a socket and leaves it untouched', async () => {
    await writeFile(socketPath, 'important');
    const err = await rejectionOf(createLocalBroker({ socketPath, logger: silentLogger }));
    expect(err.code).toBe('BROKER_SOCKET_UNSAFE');
    expect(await readFile(socketPath, 'utf8')).toBe('important');
  });

  it('refuses to take over the socket of a live daemon, which keeps serving', async () => {
    const first = await daemon();
    first.subscribe('svc.alive', async (msg) => first.publish(msg.reply as string, 'still here'));
    const err = await rejectionOf(createLocalBroker({ socketPath, logger: silentLogger }));
    expect(err.code).toBe('BROKER_SOCKET_IN_USE');
    const client = await connectLocalBroker({ socketPath });
    cleanups.push(() => client.close());
    await expect(client.request('svc.alive', null, { timeoutMs: 2000 })).resolves.toBe('still here');
  });

  it('removes a stale socket left by a daemon that died, and serves again', async () => {
    await staleSocket();
    const log = createMemoryLogger();
    const b = await daemon(log);
    expect(log.find('removed stale broker socket')).toHaveLength(1);
    b.subscribe('svc.back', async (msg) => b.publish(msg.reply as string, 'back'));
    const client = await connectLocalBroker({ socketPath });
    cleanups.push(() => client.close());
    await expect(client.request('svc.back', null)).resolves.toBe('back');
  });

  it('refuses a relative or too long socket path', async () => {
    expect((await rejectionOf(createLocalBroker({ socketPath: 'broker.sock' }))).code).toBe(
      'BROKER_SOCKET_PATH_INVALID',
    );
    const long = join(tmp.dir, 'x'.repeat(120), 'broker.sock');
    expect((await rejectionOf(createLocalBroker({ socketPath: long }))).code).toBe(
      'BROKER_SOCKET_PATH_INVALID',
    );
    expect((await rejectionOf(connectLocalBroker({ socketPath: 'rel.sock' }))).code).toBe(
      'BROKER_SOCKET_PATH_INVALID',
    );
  });
});

describe('local broker socket: daemon down or silent', () => {
  it('no socket at all: BROKER_UNREACHABLE in under 200 ms', async () => {
    const started = Date.now();
    const err = await rejectionOf(connectLocalBroker({ socketPath }));
    expect(Date.now() - started).toBeLessThan(200);
    expect(err.code).toBe('BROKER_UNREACHABLE');
    expect(err.message).toContain('start the daemon');
  });

  it('stale socket with no listener: BROKER_UNREACHABLE in under 200 ms', async () => {
    await staleSocket();
    const started = Date.now();
    const err = await rejectionOf(connectLocalBroker({ socketPath }));
    expect(Date.now() - started).toBeLessThan(200);
    expect(err.code).toBe('BROKER_UNREACHABLE');
  });

  it('the client factory reaches the daemon through the default <data_dir>/broker.sock', async () => {
    const config = resolveBrokerConfig({}, { dataDir: tmp.dir });
    expect(config).toEqual({ kind: 'local', socketPath });
    const started = Date.now();
    expect((await rejectionOf(connectBroker(config))).code).toBe('BROKER_UNREACHABLE');
    expect(Date.now() - started).toBeLessThan(200);
    const b = await daemon();
    b.subscribe('svc.cfg', async (msg) => b.publish(msg.reply as string, 'via config'));
    const client = await connectBroker(config);
    cleanups.push(() => client.close());
    await expect(client.request('svc.cfg', null)).resolves.toBe('via config');
  });

  it('a connected daemon that does not answer: BROKER_TIMEOUT exactly at the caller timeout', async () => {
    const b = await daemon();
    const got = collector();
    b.subscribe('control.reload', got.handler);
    const client = await connectLocalBroker({ socketPath });
    cleanups.push(() => client.close());
    await client.flush();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let settled = false;
    const outcome = rejectionOf(
      client.request('control.reload', { request_id: 'r1' }, { timeoutMs: 5000 }),
    ).finally(() => {
      settled = true;
    });
    // setImmediate is not faked: wait for the daemon to receive the request without moving the clock.
    while (got.messages.length === 0) await new Promise((r) => setImmediate(r));
    await vi.advanceTimersByTimeAsync(4999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const err = await outcome;
    expect(err.code).toBe('BROKER_TIMEOUT');
    expect(err.message).toContain('5000 ms');
  });

  it('the daemon going away mid-request: BROKER_DISCONNECTED, then for every call', async () => {
    const b = await createLocalBroker({ socketPath, logger: silentLogger });
    b.subscribe('svc.hang', () => {});
    const log = createMemoryLogger();
    const client = await connectLocalBroker({ socketPath, logger: log });
    cleanups.push(() => client.close());
    await client.flush();
    const pending = rejectionOf(client.request('svc.hang', null, { timeoutMs: 5000 }));
    await b.close();
    expect((await pending).code).toBe('BROKER_DISCONNECTED');
    expect((await rejectionOf(client.publish('svc.hang', 1))).code).toBe('BROKER_DISCONNECTED');
    expect(log.find('broker connection to daemon lost')).toHaveLength(1);
  });
});

describe('local broker socket: frame protocol', () => {
  it('answers bad JSON, non-objects, unknown ops and bad ids with err frames and keeps the connection', async () => {
    const b = await daemon();
    const raw = await rawConnection();
    raw.sock.write(
      'not json\n[1,2]\n{"op":"nope"}\n{"op":"sub","sid":"a","subject":"x"}\n{"op":"req","id":9,"subject":"a..b"}\n',
    );
    await raw.next(5);
    expect(raw.frames.map((f) => f.code)).toEqual([
      'BROKER_BAD_FRAME',
      'BROKER_BAD_FRAME',
      'BROKER_BAD_FRAME',
      'BROKER_BAD_FRAME',
      'BROKER_INVALID_SUBJECT',
    ]);
    expect(raw.frames[4]?.id).toBe(9);
    raw.sock.write('{"op":"sub","sid":1,"subject":"after.errors"}\n{"op":"ping","id":1}\n');
    await raw.next(6);
    expect(raw.frames[5]).toEqual({ op: 'pong', id: 1 });
    await b.publish('after.errors', { ok: true });
    await raw.next(7);
    expect(raw.frames[6]).toEqual({ op: 'msg', sid: 1, subject: 'after.errors', data: { ok: true } });
  });

  it('refuses a frame above the size cap once, skips it, and serves the next frame', async () => {
    await daemon();
    const raw = await rawConnection();
    const chunk = 'x'.repeat(256 * 1024);
    for (let sent = 0; sent <= MAX_FRAME_BYTES; sent += chunk.length) raw.sock.write(chunk);
    raw.sock.write('\n{"op":"ping","id":7}\n');
    await raw.next(2);
    expect(raw.frames[0]?.code).toBe('BROKER_FRAME_TOO_LARGE');
    expect(raw.frames[1]).toEqual({ op: 'pong', id: 7 });
    expect(raw.frames).toHaveLength(2);
  });

  it('a cancelled request gets no answer, even when the responder replies later', async () => {
    const b = await daemon();
    const held: string[] = [];
    b.subscribe('svc.later', (msg) => {
      held.push(msg.reply as string);
    });
    const raw = await rawConnection();
    raw.sock.write('{"op":"req","id":5,"subject":"svc.later","timeout_ms":60000,"data":1}\n');
    await vi.waitFor(() => expect(held).toHaveLength(1));
    raw.sock.write('{"op":"cancel","id":5}\n{"op":"ping","id":6}\n');
    await raw.next(1);
    await b.publish(held[0] as string, 'too late');
    raw.sock.write('{"op":"ping","id":7}\n');
    await raw.next(2);
    expect(raw.frames).toEqual([
      { op: 'pong', id: 6 },
      { op: 'pong', id: 7 },
    ]);
  });

  it('reassembles a frame split across writes, even inside a multi-byte character', async () => {
    const b = await daemon();
    b.subscribe('svc.echo', async (msg) => b.publish(msg.reply as string, msg.data));
    const raw = await rawConnection();
    const bytes = Buffer.from(
      JSON.stringify({ op: 'req', id: 3, subject: 'svc.echo', data: 'grüße' }) + '\n',
    );
    const cut = bytes.indexOf(Buffer.from('ü')) + 1; // between the two bytes of "ü"
    for (const part of [bytes.subarray(0, 5), bytes.subarray(5, cut), bytes.subarray(cut)]) {
      raw.sock.write(part);
      await new Promise((r) => setTimeout(r, 20));
    }
    await raw.next(1);
    expect(raw.frames[0]).toEqual({ op: 'res', id: 3, data: 'grüße' });
  });
});

describe('local broker socket: another process', () => {
  it('a second process reaches the daemon socket with raw node:net and gets a reply', async () => {
    const b = await daemon();
    const subject = uniqueSubject('svc.cross');
    b.subscribe(subject, async (msg) => b.publish(msg.reply as string, { pong: msg.data }));
    const child = spawnNodeScript(RAW_REQUEST_SCRIPT, { BROKER_SOCKET: socketPath, SUBJECT: subject });
    const line = await waitForLine(child, (l) => l.startsWith('{'));
    expect(JSON.parse(line)).toEqual({ op: 'res', id: 1, data: { pong: { from: 'child' } } });
    expect(await waitForExit(child)).toBe(0);
  });

  it('a responder in another process answers a request made from this process', async () => {
    await daemon();
    const subject = uniqueSubject('svc.remote');
    const child = spawnNodeScript(RAW_RESPONDER_SCRIPT, { BROKER_SOCKET: socketPath, SUBJECT: subject });
    cleanups.push(async () => child.kill());
    await waitForLine(child, (l) => l === 'ready');
    const client = await connectLocalBroker({ socketPath });
    cleanups.push(() => client.close());
    await expect(client.request(subject, { q: 1 }, { timeoutMs: 3000 })).resolves.toEqual({
      answered_by: 'child',
      got: { q: 1 },
    });
    expect(await waitForExit(child)).toBe(0);
  });
});
