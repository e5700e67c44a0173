/**
 * What every console answer carries: a strict Content-Security-Policy (scripts and styles from this server's
 * own files only, no inline code, no frames, no foreign connections), no framing, no referrer, no sniffing.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CSP,
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** Pages show live state and job details: never stored by the browser or a proxy. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...SECURITY_HEADERS,
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
};
