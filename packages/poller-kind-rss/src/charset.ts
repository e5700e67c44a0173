// Turning the bytes of a feed into text.
//
// Rule (RFC 7303 §3 order, plus two repairs for the common lies):
//   1. A byte order mark wins (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE).
//   2. Without one, a BOM-less UTF-16/UTF-32 `<?xml` start is recognised by its byte pattern.
//   3. Otherwise the HTTP `charset=` parameter, then the XML declaration's `encoding=`, then UTF-8.
//   4. Repairs: if the chosen charset is UTF-8 but the bytes are not valid UTF-8, the other declared
//      charset is used, or windows-1252 when there is none. If the HTTP charset is a single-byte one but
//      the XML declaration says UTF-8 and the body is valid UTF-8 with non-ASCII bytes, UTF-8 is used.
// `TextDecoder` knows the WHATWG encodings (iso-8859-x, windows-125x, koi8, gb18030, big5, euc-kr, …).
import { isUtf8 } from 'node:buffer';

export interface DecodedBody {
  text: string;
  /** The encoding actually used, lower case (a WHATWG name, or `utf-32le`/`utf-32be`). */
  encoding: string;
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  if (bytes.length < prefix.length) return false;
  return prefix.every((byte, index) => bytes[index] === byte);
}

function decodeUtf32(bytes: Uint8Array, littleEndian: boolean, skip: number): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: string[] = [];
  let chunk: number[] = [];
  for (let offset = skip; offset + 4 <= bytes.length; offset += 4) {
    const code = view.getUint32(offset, littleEndian);
    chunk.push(code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ? 0xfffd : code);
    if (chunk.length === 4096) {
      parts.push(String.fromCodePoint(...chunk));
      chunk = [];
    }
  }
  parts.push(String.fromCodePoint(...chunk));
  return parts.join('');
}

function sniffByteOrder(bytes: Uint8Array): { encoding: string; skip: number } | undefined {
  // UTF-32 LE must be tested before UTF-16 LE: its BOM starts with the same two bytes.
  if (startsWith(bytes, [0xff, 0xfe, 0x00, 0x00])) return { encoding: 'utf-32le', skip: 4 };
  if (startsWith(bytes, [0x00, 0x00, 0xfe, 0xff])) return { encoding: 'utf-32be', skip: 4 };
  if (startsWith(bytes, [0xef, 0xbb, 0xbf])) return { encoding: 'utf-8', skip: 3 };
  if (startsWith(bytes, [0xff, 0xfe])) return { encoding: 'utf-16le', skip: 2 };
  if (startsWith(bytes, [0xfe, 0xff])) return { encoding: 'utf-16be', skip: 2 };
  // No BOM: a document starting with `<` in a wide encoding (XML 1.0 Appendix F).
  if (startsWith(bytes, [0x3c, 0x00, 0x00, 0x00])) return { encoding: 'utf-32le', skip: 0 };
  if (startsWith(bytes, [0x00, 0x00, 0x00, 0x3c])) return { encoding: 'utf-32be', skip: 0 };
  if (startsWith(bytes, [0x3c, 0x00]) && bytes[2] !== 0x00 && bytes[3] === 0x00) {
    return { encoding: 'utf-16le', skip: 0 };
  }
  if (startsWith(bytes, [0x00, 0x3c, 0x00]) && bytes[3] !== 0x00) return { encoding: 'utf-16be', skip: 0 };
  return undefined;
}

/** The `charset` parameter of a Content-Type header, lower case, without quotes; undefined if absent. */
export function charsetFromContentType(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s;]+))/i.exec(contentType.slice(0, 512));
  const value = (match?.[1] ?? match?.[2] ?? match?.[3])?.trim().toLowerCase();
  return value || undefined;
}

/** The `encoding` of the XML declaration, read from the first bytes as ASCII; undefined if absent. */
export function encodingFromXmlDeclaration(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 512));
  const match = /^\s*<\?xml\s[^>]{0,400}?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']/.exec(head);
  return match?.[1]?.toLowerCase();
}

function canonicalName(label: string | undefined): string | undefined {
  if (!label) return undefined;
  try {
    const name = new TextDecoder(label).encoding;
    // WHATWG maps dangerous legacy labels (iso-2022-kr, hz-gb-2312, …) to a decoder that outputs one U+FFFD.
    return name === 'replacement' ? undefined : name;
  } catch {
    return undefined; // not a label TextDecoder knows
  }
}

function isValidUtf8(bytes: Uint8Array): boolean {
  // Validates without decoding: a large body is then decoded once, not twice.
  return isUtf8(bytes);
}

function hasNonAscii(bytes: Uint8Array): boolean {
  for (const byte of bytes) if (byte >= 0x80) return true;
  return false;
}

const SINGLE_BYTE = /^(?:iso-8859-\d+|windows-125\d|koi8-[ru]|ibm866|macintosh|x-mac-cyrillic|windows-874)$/;

// A real UTF-16 document would have matched a BOM or the wide `<` pattern, so a UTF-16 label on a body
// that did not is wrong (the bytes are 8-bit): ignore it.
function notWide(name: string | undefined): string | undefined {
  return name?.startsWith('utf-16') ? undefined : name;
}

/** Decodes a feed body following the rule in this module's header comment. Never throws. */
export function decodeBody(bytes: Uint8Array, contentType?: string): DecodedBody {
  const byteOrder = sniffByteOrder(bytes);
  if (byteOrder) {
    const { encoding, skip } = byteOrder;
    if (encoding === 'utf-32le' || encoding === 'utf-32be') {
      return { text: decodeUtf32(bytes, encoding === 'utf-32le', skip), encoding };
    }
    return { text: new TextDecoder(encoding).decode(bytes.subarray(skip)), encoding };
  }

  const fromHttp = notWide(canonicalName(charsetFromContentType(contentType)));
  const fromXml = notWide(canonicalName(encodingFromXmlDeclaration(bytes)));
  let encoding = fromHttp ?? fromXml ?? 'utf-8';

  if (encoding === 'utf-8' && !isValidUtf8(bytes)) {
    const other = [fromHttp, fromXml].find((name) => name !== undefined && name !== 'utf-8');
    encoding = other ?? 'windows-1252';
  } else if (
    fromHttp !== undefined &&
    SINGLE_BYTE.test(fromHttp) &&
    fromXml === 'utf-8' &&
    hasNonAscii(bytes) &&
    isValidUtf8(bytes)
  ) {
    encoding = 'utf-8';
  }
  return { text: new TextDecoder(encoding).decode(bytes), encoding };
}
