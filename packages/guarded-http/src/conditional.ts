/**
 * Conditional GET: validators are stored verbatim (quotes and `W/` kept) and sent back unchanged.
 */

export interface Validators {
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/** Response headers as `request()` returns them, a fetch `Headers`, or a plain record. */
export type HeaderSource =
  { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

// A value that would break the request line (CR, LF, NUL) or is absurdly long is not sent.
function usable(value: string | undefined): value is string {
  return typeof value === 'string' && value.trim() !== '' && value.length <= 1024 && !/[\r\n\0]/.test(value);
}

/** `If-None-Match` / `If-Modified-Since` for the stored validators (absent ones are left out). */
export function conditionalHeaders(validators: Validators | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (validators == null) return out;
  if (usable(validators.etag)) out['if-none-match'] = validators.etag;
  if (usable(validators.lastModified)) out['if-modified-since'] = validators.lastModified;
  return out;
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const v = (headers as { get(name: string): string | null }).get(name);
    return v ?? undefined;
  }
  const rec = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : rec[key];
  return Array.isArray(v) ? v[0] : (v as string | undefined);
}

/**
 * Validators to store after a 200 or 304. A validator the response does not carry keeps its
 * `previous` value (a 304 may omit unchanged ones, RFC 9111 §4.3.4).
 */
export function validatorsFrom(headers: HeaderSource, previous: Validators = {}): Validators {
  const etag = header(headers, 'etag');
  const lastModified = header(headers, 'last-modified');
  const out: Validators = {};
  const e = usable(etag) ? etag : previous.etag;
  const lm = usable(lastModified) ? lastModified : previous.lastModified;
  if (e !== undefined) out.etag = e;
  if (lm !== undefined) out.lastModified = lm;
  return out;
}
