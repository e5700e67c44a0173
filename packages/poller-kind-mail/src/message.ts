/**
 * A message resource of the mail API (`messages.get?format=full`) turned into what the kind needs.
 * Part bodies arrive as base64url of the part bytes with the transfer encoding removed; they are decoded
 * with the part charset (or as UTF-8 when they already are). Headers may hold RFC 2047 encoded words.
 */
import {
  charsetOf,
  decodeBase64Url,
  decodeCharset,
  decodeEntities,
  decodeHeaderWords,
  decodeQuotedPrintable,
  htmlToText,
  normalizeWhitespace,
} from './text.js';
import { senderAddress } from './sender.js';

export interface MailMessage {
  id: string;
  threadId: string;
  labelIds: string[];
  /** Receipt time, ms since the epoch (0 when absent). */
  internalDate: number;
  /** Entities decoded. */
  snippet: string;
  subject: string;
  /** Decoded `From` header as written (display name and address). */
  from: string;
  /** The sender address, lower-case; `null` when the header is missing, malformed or names several. */
  fromAddress: string | null;
  /** `Date` header as written. */
  date: string;
  /** Decoded body text: text/plain parts, else text/html converted to text. */
  text: string;
}

/** Characters of body text kept per message. */
const BODY_MAX_CHARS = 100_000;

interface Part {
  mimeType?: unknown;
  filename?: unknown;
  headers?: unknown;
  body?: { data?: unknown; attachmentId?: unknown } | null;
  parts?: unknown;
}

function headerOf(part: Part, name: string): string | undefined {
  if (!Array.isArray(part.headers)) return undefined;
  const lower = name.toLowerCase();
  for (const h of part.headers as { name?: unknown; value?: unknown }[])
    if (typeof h?.name === 'string' && h.name.toLowerCase() === lower && typeof h.value === 'string')
      return h.value;
  return undefined;
}

function partText(part: Part): string {
  const data = part.body?.data;
  if (typeof data !== 'string' || data === '') return '';
  let bytes: Buffer = decodeBase64Url(data);
  // Some sources hand parts over still quoted-printable; the header says so and the text shows soft breaks.
  const cte = headerOf(part, 'Content-Transfer-Encoding')?.trim().toLowerCase();
  if (cte === 'quoted-printable' && /=(\r?\n|[0-9A-F]{2})/.test(bytes.toString('latin1')))
    bytes = decodeQuotedPrintable(bytes.toString('latin1'));
  return decodeCharset(bytes, charsetOf(headerOf(part, 'Content-Type')));
}

function isAttachment(part: Part): boolean {
  if (typeof part.filename === 'string' && part.filename !== '') return true;
  return /^\s*attachment/i.test(headerOf(part, 'Content-Disposition') ?? '');
}

function collect(part: Part, plain: string[], html: string[], depth = 0): void {
  if (depth > 20) return;
  const type = typeof part.mimeType === 'string' ? part.mimeType.toLowerCase() : '';
  if (Array.isArray(part.parts)) {
    for (const p of part.parts as Part[]) if (p && typeof p === 'object') collect(p, plain, html, depth + 1);
    return;
  }
  if (isAttachment(part)) return;
  if (type === 'text/plain') plain.push(partText(part));
  else if (type === 'text/html') html.push(partText(part));
}

/** `null` when the resource has no id. */
export function parseMessage(resource: unknown): MailMessage | null {
  if (!resource || typeof resource !== 'object') return null;
  const r = resource as {
    id?: unknown;
    threadId?: unknown;
    labelIds?: unknown;
    internalDate?: unknown;
    snippet?: unknown;
    payload?: unknown;
  };
  if (typeof r.id !== 'string' || r.id === '') return null;
  const payload = (r.payload && typeof r.payload === 'object' ? r.payload : {}) as Part;
  const plain: string[] = [];
  const html: string[] = [];
  collect(payload, plain, html);
  let text = plain.some((t) => t.trim())
    ? normalizeWhitespace(plain.join('\n\n'))
    : html.length
      ? htmlToText(html.join('\n'))
      : '';
  if (text.length > BODY_MAX_CHARS) text = text.slice(0, BODY_MAX_CHARS);
  const rawFrom = headerOf(payload, 'From') ?? '';
  const from = decodeHeaderWords(rawFrom).trim();
  const date = Number(r.internalDate);
  return {
    id: r.id,
    threadId: typeof r.threadId === 'string' ? r.threadId : '',
    labelIds: Array.isArray(r.labelIds) ? r.labelIds.filter((l): l is string => typeof l === 'string') : [],
    internalDate: Number.isFinite(date) ? date : 0,
    snippet: typeof r.snippet === 'string' ? decodeEntities(r.snippet) : '',
    subject: decodeHeaderWords(headerOf(payload, 'Subject') ?? '').trim(),
    from,
    // From the raw header: encoded words in a display name must not be able to forge an address.
    fromAddress: senderAddress(rawFrom),
    date: (headerOf(payload, 'Date') ?? '').trim(),
    text,
  };
}
