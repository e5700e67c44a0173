/**
 * Request checks of the admin API, beyond the loopback bind: a page open in a local browser can reach
 * 127.0.0.1, so the Host (DNS rebinding), the browser's own cross-site marks and the body type (form posts
 * need no preflight) are checked, and an optional bearer token is compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AdminError } from './errors.js';

const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/i;

/** `127.0.0.1[:port]`, `localhost[:port]` or `[::1][:port]`. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOST.test(host);
}

/** Host of the request: the `Host` header when present, else the host of the request URL. */
export function requestHost(headers: Headers, url: string): string {
  const h = headers.get('host');
  if (h !== null) return h.trim();
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

export function checkHost(host: string): void {
  if (!isLoopbackHost(host))
    throw new AdminError(
      'ADMIN_HOST_NOT_LOOPBACK',
      'refused: the Host header is not a loopback address; call the admin API at 127.0.0.1, localhost or [::1]',
    );
}

/** Refuses what a browser marks as coming from another site; clients that send none of these headers pass. */
export function checkSameOrigin(headers: Headers, host: string): void {
  const site = headers.get('sec-fetch-site')?.trim().toLowerCase();
  if (site === 'cross-site' || site === 'same-site')
    throw new AdminError('ADMIN_CROSS_SITE', `refused: the request was sent by another site (${site})`);
  const origin = headers.get('origin');
  if (origin === null) return;
  const own = [`http://${host.toLowerCase()}`, `https://${host.toLowerCase()}`];
  if (!own.includes(origin.trim().toLowerCase()))
    throw new AdminError('ADMIN_CROSS_SITE', 'refused: the request comes from another origin');
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
