/** A minimal real HTTP client over the built-in fetch, fitting `OAuth2HttpClient`, for this package's tests. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuth2HttpClient } from '../src/index.js';

export function fetchHttp(): OAuth2HttpClient & {
  calls: { url: string; headers: Record<string, string> }[];
} {
  const calls: { url: string; headers: Record<string, string> }[] = [];
  return {
    calls,
    async request(url, options = {}) {
      calls.push({ url, headers: { ...options.headers } });
      const res = await fetch(url, {
        method: options.method ?? 'GET',
        headers: options.headers ? { ...options.headers } : {},
        ...(options.body !== undefined ? { body: options.body } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const text = await res.text();
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => (headers[k] = v));
      const ra = headers['retry-after'];
      return {
        status: res.status,
        headers,
        retryAfterMs: ra && /^\d+$/.test(ra) ? Number(ra) * 1000 : undefined,
        text: () => text,
      };
    },
  };
}

/** A protected API: 200 `{ok: true}` for a valid bearer token, 401 in Google's error shape otherwise. */
export async function startProtectedApi(isValid: (token: string) => boolean): Promise<{
  url: string;
  hits: number;
  close(): Promise<void>;
}> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    const auth = req.headers.authorization ?? '';
    const ok = auth.startsWith('Bearer ') && isValid(auth.slice(7));
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        ok
          ? { ok: true }
          : { error: { code: 401, message: 'Invalid Credentials', errors: [{ reason: 'authError' }] } },
      ),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/thing`,
    get hits() {
      return hits;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
