/**
 * Request checks of the admin API, beyond the loopback bind: a page open in a local browser can reach
 * 127.0.0.1, so the Host (DNS rebinding), the browser's own cross-site marks and the body type (form posts
 * need no preflight) are checked, and an optional bearer token is compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AdminError } from './errors.js';

const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/i;
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[^\s:[\]/@]+)(?::(\d{1,5}))?$/i;

/** `127.0.0.1[:port]`, `localhost[:port]` or `[::1][:port]`. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOST.test(host);
}

/** Where a request came in: the listener's address and port. Unknown for `app.request()` in tests. */
export interface LocalEnd {
  address?: string;
  port?: number;
}

/** The local end of the request's socket, from the bindings `@hono/node-server` passes as `c.env`. */
export function localEndOf(env: unknown): LocalEnd | undefined {
  const socket = (env as { incoming?: { socket?: { localAddress?: unknown; localPort?: unknown } } } | null)
    ?.incoming?.socket;
  if (!socket) return undefined;
  return {
    ...(typeof socket.localAddress === 'string' ? { address: socket.localAddress } : {}),
    ...(typeof socket.localPort === 'number' ? { port: socket.localPort } : {}),
  };
}

/** An address or name as it appears in a Host header (IPv6 in brackets), lower case; `[]` for a wildcard. */
function hostNames(address: string): string[] {
  const a = address
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (a === '' || a === '0.0.0.0' || a === '::') return [];
  // A dual-stack socket reports an IPv4 client's address as ::ffff:a.b.c.d; the client wrote a.b.c.d.
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a)?.[1];
  if (v4 !== undefined) return [v4, `[${a}]`];
  return a.includes(':') ? [`[${a}]`] : [a];
}

export interface RequestHost {
  /** Lower case; IPv6 in brackets. */
  name: string;
  port: number | undefined;
}

/**
 * The `Host` of the request, which must name a loopback address or the listener's own (`local.address`, or
 * one of `names`, e.g. the configured listen host): a DNS-rebinding page sends its own name, and a request
 * without a Host names nothing (it is refused, not taken for the listener).
 */
export function checkHost(headers: Headers, local?: LocalEnd, names: readonly string[] = []): RequestHost {
  const raw = headers.get('host')?.trim() ?? '';
  if (raw === '')
    throw new AdminError(
      'ADMIN_HOST_NOT_LOOPBACK',
      'refused: the request has no Host header; call the admin API at 127.0.0.1, localhost or [::1]',
    );
  const m = HOST_HEADER.exec(raw);
  const host: RequestHost | undefined = m
    ? { name: m[1]!.toLowerCase(), port: m[2] === undefined ? undefined : Number(m[2]) }
    : undefined;
  const own = [...(local?.address ? hostNames(local.address) : []), ...names.flatMap(hostNames)];
  if (!host || !(LOOPBACK_NAMES.has(host.name) || own.includes(host.name)))
    throw new AdminError(
      'ADMIN_HOST_NOT_LOOPBACK',
      'refused: the Host header is not a loopback address; call the admin API at 127.0.0.1, localhost or [::1]',
    );
  return host;
}

/**
 * Refuses what a browser marks as coming from another site; clients that send none of these headers pass.
 * The server's own origin is `http://<Host>` on the port the request came in on: this server speaks plain
 * HTTP, so an `https://` origin, or another port, is another site.
 */
export function checkSameOrigin(headers: Headers, host: RequestHost, local?: LocalEnd): void {
  const site = headers.get('sec-fetch-site')?.trim().toLowerCase();
  if (site === 'cross-site' || site === 'same-site')
    throw new AdminError('ADMIN_CROSS_SITE', `refused: the request was sent by another site (${site})`);
  const origin = headers.get('origin');
  if (origin === null) return;
  if (!isOwnOrigin(origin.trim(), host, local))
    throw new AdminError('ADMIN_CROSS_SITE', 'refused: the request comes from another origin');
}

function isOwnOrigin(origin: string, host: RequestHost, local?: LocalEnd): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` and anything else that is not an origin
  }
  return (
    url.protocol === 'http:' &&
    url.origin === origin.toLowerCase() &&
    url.hostname === host.name &&
    Number(url.port || 80) === (local?.port ?? host.port ?? 80)
  );
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** `Authorization: Bearer <token>`; digests make the comparison constant-time whatever the lengths. */
export function checkToken(headers: Headers, token: string): void {
  const m = /^Bearer[ \t]+(\S+)\s*$/i.exec(headers.get('authorization') ?? '');
  const ok = m !== null && timingSafeEqual(digest(m[1]!), digest(token));
  if (!ok)
    throw new AdminError(
      'ADMIN_UNAUTHORIZED',
      'refused: this admin API needs "Authorization: Bearer <token>" with the content of admin.token_file',
    );
}

/** A POST may carry no body, or JSON. Any other Content-Type is refused even with an empty body. */
export function checkMutationBody(headers: Headers): void {
  const type = headers.get('content-type');
  const length = headers.get('content-length');
  const hasBody = (length !== null && length.trim() !== '0') || headers.has('transfer-encoding');
  if (type === null) {
    if (hasBody)
      throw new AdminError(
        'ADMIN_CONTENT_TYPE',
        'refused: a request body needs "Content-Type: application/json"',
      );
    return;
  }
  const mime = type.split(';')[0]!.trim().toLowerCase();
  if (mime !== 'application/json')
    throw new AdminError(
      'ADMIN_CONTENT_TYPE',
      `refused: Content-Type "${mime}" is not accepted; send JSON with "Content-Type: application/json" or no body`,
    );
}

export const MAX_BODY_BYTES = 64 * 1024;

/** Reads a JSON object body (empty = `{}`), at most 64 KiB. */
export async function readJsonObject(req: Request): Promise<Record<string, unknown>> {
  const declared = Number(req.headers.get('content-length') ?? '0');
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES)
    throw new AdminError('ADMIN_BODY_TOO_LARGE', `the request body is larger than ${MAX_BODY_BYTES} bytes`);
  if (!req.body) return {};
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw new AdminError('ADMIN_BODY_TOO_LARGE', `the request body is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AdminError('ADMIN_BAD_REQUEST', 'the request body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new AdminError('ADMIN_BAD_REQUEST', 'the request body must be a JSON object');
  return parsed as Record<string, unknown>;
}
