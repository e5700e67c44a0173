/**
 * Text decoding for mail: base64url bodies, charsets, RFC 2047 encoded words (B and Q, the latter a
 * quoted-printable variant), quoted-printable, HTML to text and HTML entities. Never throws.
 */

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  bull: '•',
  middot: '·',
  copy: '©',
  reg: '®',
  trade: '™',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  deg: '°',
  times: '×',
  divide: '÷',
  iexcl: '¡',
  iquest: '¿',
  shy: '\u00ad',
  zwnj: '\u200c',
  zwj: '\u200d',
};

const MARKS: Record<string, string> = {
  acute: '\u0301',
  grave: '\u0300',
  circ: '\u0302',
  tilde: '\u0303',
  uml: '\u0308',
  ring: '\u030a',
  cedil: '\u0327',
};
const LETTERS: Record<string, string> = {
  szlig: 'ß',
  aelig: 'æ',
  AElig: 'Æ',
  oslash: 'ø',
  Oslash: 'Ø',
  eth: 'ð',
  thorn: 'þ',
};

/** Latin letters with a diacritic (`&aacute;`, `&Ntilde;`, `&uuml;`, ...) and a few ligatures. */
function accented(ref: string): string | undefined {
  if (LETTERS[ref]) return LETTERS[ref];
  const m = /^([A-Za-z])(acute|grave|circ|tilde|uml|ring|cedil)$/.exec(ref);
  if (!m) return undefined;
  const composed = (m[1]! + MARKS[m[2]!]!).normalize('NFC');
  return composed.length === 1 ? composed : undefined;
}

/** Decodes numeric (`&#39;`, `&#x1F600;`) and common named entities; unknown ones are left as they are. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z][a-z0-9]{1,31});/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isFinite(code) || code <= 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
        return '\ufffd';
      return String.fromCodePoint(code);
    }
    return NAMED_ENTITIES[ref] ?? accented(ref) ?? whole;
  });
}

/** Plain text of an HTML body: scripts and styles dropped, block ends as newlines, entities decoded. */
export function htmlToText(html: string): string {
  const text = html
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|tr|li|h[1-6]|table|blockquote)\s*>/gi, '\n')
    .replace(/<[^>]*>/g, '');
  return normalizeWhitespace(decodeEntities(text));
}

/** Trailing spaces per line removed, runs of blank lines collapsed, CRLF to LF. */
export function normalizeWhitespace(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t\u00a0]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** `base64url` (padding optional; standard base64 is accepted too). */
export function decodeBase64Url(data: string): Buffer {
  return Buffer.from(data.replace(/-/g, '+').replace(/_/g, '/').replace(/\s+/g, ''), 'base64');
}

/** Quoted-printable (RFC 2045): `=XX` bytes and `=` soft line breaks. `underscoreIsSpace` for RFC 2047 Q. */
export function decodeQuotedPrintable(input: string, underscoreIsSpace = false): Buffer {
  const s = underscoreIsSpace ? input.replace(/_/g, ' ') : input.replace(/=\r?\n/g, '');
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x3d && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      out.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (c < 0x80) out.push(c);
    else out.push(...Buffer.from(s[i]!, 'utf8'));
  }
  return Buffer.from(out);
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Bytes to text. Valid UTF-8 wins (the API may already have converted the part, and ASCII is valid
 * UTF-8 in every charset we accept); otherwise the declared charset; an unknown label falls back to
 * windows-1252, which maps every byte.
 */
export function decodeCharset(bytes: Uint8Array, charset: string | undefined): string {
  try {
    return fatalUtf8.decode(bytes);
  } catch {
    // not UTF-8: use the declared charset
  }
  const label = (charset ?? '').trim().toLowerCase();
  if (label && label !== 'utf-8' && label !== 'utf8') {
    try {
      return new TextDecoder(label).decode(bytes);
    } catch {
      // unknown label
    }
  }
  return new TextDecoder(label === 'utf-8' || label === 'utf8' ? 'utf-8' : 'windows-1252').decode(bytes);
}

const ENCODED_WORD = /=\?([^?\s*]+)(?:\*[^?\s]*)?\?([bBqQ])\?([^?\s]*)\?=/g;

/** Decodes RFC 2047 encoded words in a header value; whitespace between adjacent words is dropped. */
export function decodeHeaderWords(value: string): string {
  const joined = value.replace(/(\?=)\s+(=\?)/g, '$1$2');
  return joined.replace(ENCODED_WORD, (_w, charset: string, enc: string, data: string) => {
    const bytes = enc.toLowerCase() === 'b' ? Buffer.from(data, 'base64') : decodeQuotedPrintable(data, true);
    return decodeCharset(bytes, charset);
  });
}

/** The `charset` parameter of a Content-Type value. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return m?.[1];
}
