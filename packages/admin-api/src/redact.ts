/** Keeping secrets out of admin JSON: by key name, by `headers` maps, and by the snapshot's own redactor. */

export const REDACTED = '[redacted]';

/** Key names whose values are secrets whatever the kind (`api_key`, `client_secret`, `password`, ...). */
export const SECRET_KEY_PATTERN =
  /(secret|token|passw(or)?d|passphrase|api[_-]?key|auth(orization)?$|credential|private[_-]?key|cookie|signature|bearer)/i;

/**
 * Config of one job with secrets replaced: every value under a key named like a secret, and every value of a
 * `headers` map (webhook_poll sends bearer tokens there).
 */
export function redactJobConfig(value: unknown): unknown {
  if (typeof value === 'string') return redactUrl(value);
  if (Array.isArray(value)) return value.map(redactJobConfig);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (SECRET_KEY_PATTERN.test(k)) out[k] = REDACTED;
    else if (k.toLowerCase() === 'headers' && v !== null && typeof v === 'object' && !Array.isArray(v))
      out[k] = Object.fromEntries(Object.keys(v).map((h) => [h, REDACTED]));
    else out[k] = redactJobConfig(v);
  }
  return out;
}

/** A URL's query values and user info are often credentials (`?token=`, `user:pass@`): hide them. */
export function redactUrl(text: string): string {
  if (!/^https?:\/\//i.test(text)) return text;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  if (!url.search && !url.username && !url.password) return text;
  const query = [...url.searchParams.keys()].map((k) => `${encodeURIComponent(k)}=${REDACTED}`).join('&');
  return `${url.protocol}//${url.host}${url.pathname}${query ? `?${query}` : ''}${url.hash}`;
}

/** Applies `redact` to every string (values, not keys) of a JSON value. */
export function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactStrings(v, redact));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactStrings(v, redact)]));
}
