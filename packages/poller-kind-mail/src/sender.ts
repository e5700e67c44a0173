/**
 * The sender address of a `From` header and the `sender_allowlist` match. The address is the
 * angle-addr (`<a@b>`) when there is one, outside quoted strings and comments; a display name such as
 * `"boss@corp.com" <evil@x.com>` never counts.
 */

/** Strips comments and quoted strings (keeping a placeholder) so `<`, `@` and `,` in them are inert. */
function mask(value: string): string {
  let out = '';
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '\\' && (quoted || depth > 0)) {
      // Same length as the input: indices of the mask are indices of the header.
      out += i + 1 < value.length ? '  ' : ' ';
      i++;
      continue;
    }
    if (quoted) {
      if (c === '"') quoted = false;
      out += ' ';
    } else if (depth > 0) {
      if (c === '(') depth++;
      else if (c === ')') depth--;
      out += ' ';
    } else if (c === '"') {
      quoted = true;
      out += ' ';
    } else if (c === '(') {
      depth = 1;
      out += ' ';
    } else out += c;
  }
  return out;
}

const ADDR_SPEC =
  /^[^\s@<>()",;:\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

/**
 * The single sender address of a `From` value, lower-cased; `null` when there is none, when it is
 * malformed, or when the header names several mailboxes or a group.
 */
export function senderAddress(from: string | undefined): string | null {
  if (!from) return null;
  const m = mask(from);
  if (m.includes(',') || m.includes(':') || m.includes(';')) return null;
  const open = m.indexOf('<');
  let addr: string;
  if (open >= 0) {
    const close = m.indexOf('>', open);
    if (close < 0 || m.indexOf('<', open + 1) >= 0 || m.slice(close + 1).trim() !== '') return null;
    addr = from.slice(open + 1, close).trim();
  } else {
    addr = m.trim();
  }
  addr = addr.replace(/\.$/, '');
  return ADDR_SPEC.test(addr) ? addr.toLowerCase() : null;
}

/** A normalised allowlist pattern, or `null` when it is not an address or a domain. */
export function normalizeAllowlistPattern(pattern: string): string | null {
  let p = pattern.trim().toLowerCase();
  if (p.includes('@') && !p.startsWith('@')) return ADDR_SPEC.test(p) ? p : null;
  p = p.replace(/^\*?\.|^@/, '').replace(/\.$/, '');
  return /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/.test(p) ? p : null;
}

/**
 * True when `address` is allowed: an empty list allows everyone; `a@b.com` matches that address
 * exactly; `b.com` (or `@b.com`, `*.b.com`) matches `b.com` and its subdomains on a label boundary,
 * never `evil-b.com` or `b.com.evil`. Case-insensitive.
 */
export function senderAllowed(address: string | null, allowlist: readonly string[]): boolean {
  if (allowlist.length === 0) return true;
  if (!address) return false;
  const domain = address.slice(address.lastIndexOf('@') + 1);
  for (const raw of allowlist) {
    const p = normalizeAllowlistPattern(raw);
    if (!p) continue;
    if (p.includes('@')) {
      if (p === address) return true;
    } else if (domain === p || domain.endsWith(`.${p}`)) return true;
  }
  return false;
}
