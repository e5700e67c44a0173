import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../test/servers.js';
import { DEFAULT_MAX_BODY_BYTES } from './body.js';
import { createGuardedHttp, type GuardedHttp } from './client.js';
import { GuardedHttpError } from './errors.js';

const MiB = 1024 * 1024;
let server: TestServer;
let http: GuardedHttp;
let bombs: { gzip: Buffer; br: Buffer; deflate: Buffer; deflateRaw: Buffer };
const sent = { bytes: 0 };

async function compressZeros(
  make: () => zlib.Gzip | zlib.BrotliCompress | zlib.Deflate | zlib.DeflateRaw,
  total: number,
): Promise<Buffer> {
  const z = make();
  const out: Buffer[] = [];
  z.on('data', (c: Buffer) => out.push(c));
  const chunk = Buffer.alloc(MiB);
  for (let written = 0; written < total; written += MiB) {
    if (!z.write(chunk)) await once(z, 'drain');
  }
  z.end();
  await once(z, 'end');
  return Buffer.concat(out);
}

// Writes `total` bytes in 64 KiB chunks, honouring backpressure, until done or the client goes away.
async function stream(res: ServerResponse, total: number): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  for (let written = 0; written < total && !res.destroyed; written += chunk.length) {
    sent.bytes += chunk.length;
    if (!res.write(chunk)) {
      // The listener of the event that did not come is removed too: a long stream would pile them up.
      const done = new AbortController();
      await Promise.race([
        once(res, 'drain', { signal: done.signal }),
        once(res, 'close', { signal: done.signal }),
      ]).finally(() => done.abort());
    }
  }
  if (!res.destroyed) res.end();
}

beforeAll(async () => {
  const level = { level: 9 };
  bombs = {
    // ~100 KiB on the wire, 100 MiB decoded.
    gzip: await compressZeros(() => zlib.createGzip(level), 100 * MiB),
    br: await compressZeros(
      () => zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }),
      32 * MiB,
    ),
    deflate: await compressZeros(() => zlib.createDeflate(level), 16 * MiB),
    deflateRaw: await compressZeros(() => zlib.createDeflateRaw(level), 16 * MiB),
  };
  server = await startServer((req, res) => {
    const path = req.url ?? '/';
    if (path === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      void stream(res, 50 * MiB);
    } else if (path === '/big-declared') {
      res.writeHead(200, { 'content-length': String(50 * MiB) });
      void stream(res, 50 * MiB);
    } else if (path === '/double-gzip-bomb') {
      // The gzip bomb gzipped again: a few KiB on the wire, a 1 MiB first layer, 100 MiB decoded.
      res.writeHead(200, { 'content-encoding': 'gzip, gzip' });
      res.end(zlib.gzipSync(bombs.gzip, level));
    } else if (path.startsWith('/bomb/')) {
      const kind = path.slice('/bomb/'.length) as keyof typeof bombs;
      const encoding = kind === 'deflateRaw' ? 'deflate' : kind;
      res.writeHead(200, { 'content-encoding': encoding, 'content-length': String(bombs[kind].length) });
      res.end(bombs[kind]);
    } else if (path === '/gzip-ok') {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' });
      res.end(zlib.gzipSync('hello gzip'));
    } else if (path === '/br-ok') {
      res.writeHead(200, { 'content-encoding': 'br' });
      res.end(zlib.brotliCompressSync('hello br'));
    } else if (path === '/deflate-ok') {
      res.writeHead(200, { 'content-encoding': 'deflate' });
      res.end(zlib.deflateSync('hello zlib deflate'));
    } else if (path === '/deflate-raw-ok') {
      res.writeHead(200, { 'content-encoding': 'deflate' });
      res.end(zlib.deflateRawSync('hello raw deflate'));
    } else if (path === '/double') {
      res.writeHead(200, { 'content-encoding': 'gzip, br' });
      res.end(zlib.brotliCompressSync(zlib.gzipSync('twice')));
    } else if (path === '/unknown-coding') {
      res.writeHead(200, { 'content-encoding': 'x-custom' });
      res.end('opaque');
    } else if (path === '/corrupt-gzip') {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(Buffer.from('this is not gzip at all'));
    } else if (path === '/slow-loris') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => {
        if (res.destroyed) clearInterval(t);
        else res.write('x');
      }, 20);
      res.on('close', () => clearInterval(t));
    } else if (path === '/no-headers') {
      // Never answers.
    } else {
      res.end('ok');
    }
  });
});

afterAll(async () => {
  await server.close();
});

afterEach(async () => {
  await http?.close();
});

async function failure(p: Promise<unknown>): Promise<GuardedHttpError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GuardedHttpError);
    return err as GuardedHttpError;
  }
  throw new Error('expected the request to fail');
}

const opts = { allowPrivateNetworks: true } as const;

describe('body cap', () => {
  it('aborts a 50 MB streamed body at the default 10 MiB cap', async () => {
    http = createGuardedHttp();
    sent.bytes = 0;
    const err = await failure(http.request(`${server.origin}/big`, opts));
    expect(err.code).toBe('HTTP_BODY_TOO_LARGE');
    expect(err.limitBytes).toBe(DEFAULT_MAX_BODY_BYTES);
    expect(err.message).toContain('maxBodyBytes');
    // Reading stopped near the cap: the server did not get to push the whole 50 MB.
    expect(sent.bytes).toBeLessThan(40 * MiB);
  });

  it('refuses a declared Content-Length above the cap before reading', async () => {
    http = createGuardedHttp({ maxBodyBytes: MiB });
    const err = await failure(http.request(`${server.origin}/big-declared`, opts));
    expect(err.code).toBe('HTTP_BODY_TOO_LARGE');
    expect(err.message).toContain('Content-Length');
  });

  it('honours a per-request cap', async () => {
    http = createGuardedHttp();
    const err = await failure(http.request(`${server.origin}/big`, { ...opts, maxBodyBytes: 100_000 }));
    expect(err.code).toBe('HTTP_BODY_TOO_LARGE');
    expect(err.limitBytes).toBe(100_000);
  });

  it('aborts a gzip bomb at the cap on decompressed bytes', async () => {
    expect(bombs.gzip.length).toBeLessThan(DEFAULT_MAX_BODY_BYTES / 10);
    http = createGuardedHttp();
    const started = Date.now();
    const err = await failure(http.request(`${server.origin}/bomb/gzip`, opts));
    expect(err.code).toBe('HTTP_BODY_TOO_LARGE');
    expect(err.message).toContain('after decompression');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('reports a double-gzip bomb as HTTP_BODY_TOO_LARGE, not as a network error', async () => {
    http = createGuardedHttp({ maxBodyBytes: 4 * MiB });
    const err = await failure(http.request(`${server.origin}/double-gzip-bomb`, opts));
    expect(err.code).toBe('HTTP_BODY_TOO_LARGE');
    expect(err.message).toContain('after decompression');
    expect(err.limitBytes).toBe(4 * MiB);
  });

  it.each(['br', 'deflate', 'deflateRaw'] as const)('aborts a %s bomb at the cap', async (kind) => {
    http = createGuardedHttp({ maxBodyBytes: 2 * MiB });
    expect(bombs[kind].length).toBeLessThan(2 * MiB);
    const err = await failure(http.request(`${server.origin}/bomb/${kind}`, opts));
    expect(err.code).toBe('HTTP_BODY_TOO_LARGE');
    expect(err.limitBytes).toBe(2 * MiB);
  });

  it.each([
    ['/gzip-ok', 'hello gzip'],
    ['/br-ok', 'hello br'],
    ['/deflate-ok', 'hello zlib deflate'],
    ['/deflate-raw-ok', 'hello raw deflate'],
    ['/double', 'twice'],
    ['/unknown-coding', 'opaque'],
  ])('decodes %s', async (path, text) => {
    http = createGuardedHttp();
    const res = await http.request(`${server.origin}${path}`, opts);
    expect(res.text()).toBe(text);
  });

  it('advertises only the codings it can decode', async () => {
    http = createGuardedHttp();
    await http.request(`${server.origin}/plain`, opts);
    expect(server.requests.at(-1)?.headers['accept-encoding']).toBe('gzip, deflate, br');
  });

  it('reports a corrupt compressed body as HTTP_BAD_ENCODING', async () => {
    http = createGuardedHttp();
    const err = await failure(http.request(`${server.origin}/corrupt-gzip`, opts));
    expect(err.code).toBe('HTTP_BAD_ENCODING');
  });
});

describe('timeouts and cancellation', () => {
  it('aborts a slow-loris body at the total deadline', async () => {
    http = createGuardedHttp({ timeoutMs: 300 });
    const started = Date.now();
    const err = await failure(http.request(`${server.origin}/slow-loris`, opts));
    expect(err.code).toBe('HTTP_TIMEOUT');
    expect(err.phase).toBe('deadline');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('times out waiting for headers', async () => {
    http = createGuardedHttp({ headersTimeoutMs: 150 });
    const err = await failure(http.request(`${server.origin}/no-headers`, opts));
    expect(err.code).toBe('HTTP_TIMEOUT');
    expect(err.phase).toBe('headers');
  });

  it('times out connecting (DNS included)', async () => {
    http = createGuardedHttp({ connectTimeoutMs: 150, resolver: () => new Promise(() => {}) });
    const started = Date.now();
    const err = await failure(http.request(`http://hangs.test:${server.port}/`));
    expect(err.code).toBe('HTTP_TIMEOUT');
    expect(err.phase).toBe('connect');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('stops at the caller signal with HTTP_ABORTED', async () => {
    http = createGuardedHttp();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const err = await failure(http.request(`${server.origin}/slow-loris`, { ...opts, signal: ac.signal }));
    expect(err.code).toBe('HTTP_ABORTED');
  });

  it('does not connect when the signal is already aborted', async () => {
    http = createGuardedHttp();
    const before = server.connections();
    const err = await failure(
      http.request(`${server.origin}/plain`, { ...opts, signal: AbortSignal.abort() }),
    );
    expect(err.code).toBe('HTTP_ABORTED');
    expect(server.connections()).toBe(before);
  });

  it('reports a refused connection as HTTP_NETWORK with the cause code', async () => {
    const gone = await startServer((_req, res) => res.end());
    const port = gone.port;
    await gone.close();
    http = createGuardedHttp();
    const err = await failure(http.request(`http://127.0.0.1:${port}/`, opts));
    expect(err.code).toBe('HTTP_NETWORK');
    expect(err.causeCode).toBe('ECONNREFUSED');
  });
});
