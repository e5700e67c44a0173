import { createHash } from 'node:crypto';
import {
  DetectError,
  MalformedError,
  ParseError,
  parseAtomFeed,
  parseFeed as parseAnyFeed,
  parseRdfFeed,
  parseRssFeed,
  type AnyFeed,
  type AtomFeed,
  type JsonFeed,
  type RdfFeed,
  type RssFeed,
} from 'feedsmith';
import { decodeBody } from './charset.js';
import { parseFeedDate } from './dates.js';
import { collapseWhitespace, decodeEntities, htmlToText, plainText, truncateText } from './text.js';
import { parseJsonAsync } from '@agent/guarded-http';
import { timeSlicer, type TimeSlicer } from '@agent/timers';

/** One entry of a feed, normalised across RSS, Atom, RDF and JSON Feed. */
export interface FeedItem {
  /** Stable identity used for de-duplication; unique within one parse result. See the README for the rules. */
  id: string;
  /** Plain text (entities decoded, tags stripped, whitespace collapsed); never empty. */
  title: string;
  /** Absolute `http:`/`https:` URL, resolved against xml:base, the site link and the feed URL. */
  link?: string;
  /** When the item was published (or last updated when that is all the feed says). */
  published?: Date | undefined;
  /** Plain-text summary, at most {@link SUMMARY_MAX_CHARS} characters. */
  summary?: string;
  /** Display name of the author (an e-mail address when that is all there is). */
  author?: string;
}

type FeedFormat = 'rss' | 'atom' | 'rdf' | 'json';

export interface ParsedFeed {
  /** Plain-text feed title, when the feed has one. */
  title?: string;
  format: FeedFormat;
  /** Items in document order. Use `orderOldestFirst` to get dispatch order. */
  items: FeedItem[];
}

export interface ParseFeedOptions {
  /** The response's Content-Type header; its `charset=` parameter is honoured. */
  contentType?: string | undefined;
  /** The URL the body was fetched from (after redirects): the last base for relative links. */
  baseUrl: string;
}

/**
 * Why a body could not be read as a feed: stable codes, returned (never thrown) and named in the tick's
 * Transient error. Each with what it means and what the operator does about it.
 * @public Read from the build by scripts/gen-errors-doc.mjs (docs/errors.md).
 */
export const FEED_ERROR_CODES = {
  FEED_BODY_INVALID: {
    meaning: '`parseFeed` got a body that is not a `Buffer` or `Uint8Array`.',
    action: 'Programming error in the caller: pass the raw response bytes.',
  },
  FEED_EMPTY: {
    meaning: 'The body is empty, or has no root element.',
    action: 'Nothing at first (the tick is retried); check the server if it persists.',
  },
  FEED_HTML_PAGE: {
    meaning: 'The body is an HTML page (site home, error or challenge page).',
    action: 'Point `feed_url` at the feed itself; check for bot protection.',
  },
  FEED_UNRECOGNIZED: {
    meaning: 'The body is XML or JSON but not RSS, Atom, RDF or JSON Feed, or it is neither.',
    action: 'Check `feed_url`.',
  },
  FEED_MALFORMED: {
    meaning:
      'The body looks like a feed but cannot be parsed (broken XML, invalid JSON, JSON nested deeper than 64 levels).',
    action: 'Nothing at first: usually a broken or truncated response, retried as a transient error.',
  },
  FEED_PARSE_FAILED: {
    meaning: 'Unexpected failure inside the parser.',
    action: 'Report it with the feed URL.',
  },
} as const satisfies Record<string, { meaning: string; action: string }>;

type FeedParseErrorCode = keyof typeof FEED_ERROR_CODES;

export type ParseFeedResult =
  | { ok: true; feed: ParsedFeed; /** The character encoding used to read the body. */ encoding: string }
  | { ok: false; code: FeedParseErrorCode; error: string };

/** Summaries are cut to this many characters (they end up in chat messages). */
export const SUMMARY_MAX_CHARS = 1000;
/** Guids/ids longer than this are replaced by `h:` + their SHA-256 (keeps the seen-id store small). */
export const ID_MAX_CHARS = 512;
const TITLE_FROM_SUMMARY_CHARS = 120;
const UNTITLED = '(untitled)';

// ---------------------------------------------------------------------------------------------------------
// Prolog inspection: refuse HTML pages, drop the DOCTYPE (entities are never expanded; fast-xml-parser would
// otherwise reject documents that merely declare external entities), find the root element.

type Prolog =
  { kind: 'html' } | { kind: 'xml'; text: string; root: string } | { kind: 'empty' } | { kind: 'none' };

const FEED_ROOTS = new Set(['rss', 'feed', 'rdf', 'channel']);

function findDoctypeEnd(text: string, start: number): number {
  let depth = 0;
  let quote = '';
  for (let index = start; index < text.length; index++) {
    const char = text[index];
    if (quote) {
      if (char === quote) quote = '';
    } else if (char === '"' || char === "'") {
      quote = char;
    } else if (char === '[') {
      depth++;
    } else if (char === ']') {
      depth--;
    } else if (char === '>' && depth <= 0) {
      return index;
    }
  }
  return text.length - 1;
}

function inspectProlog(input: string): Prolog {
  let text = input;
  let index = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let htmlDoctype = false;
  for (;;) {
    while (index < text.length && /\s/.test(text[index] ?? '')) index++;
    if (index >= text.length) return { kind: 'empty' };
    if (text.startsWith('<?', index)) {
      const end = text.indexOf('?>', index + 2);
      if (end === -1) return { kind: 'none' };
      index = end + 2;
    } else if (text.startsWith('<!--', index)) {
      const end = text.indexOf('-->', index + 4);
      if (end === -1) return { kind: 'none' };
      index = end + 3;
    } else if (text.slice(index, index + 9).toUpperCase() === '<!DOCTYPE') {
      const end = findDoctypeEnd(text, index + 9);
      if (/^<!DOCTYPE\s+html\b/i.test(text.slice(index, index + 20))) htmlDoctype = true;
      text = text.slice(0, index) + text.slice(end + 1);
    } else if (text[index] === '<') {
      const match = /^<([A-Za-z_][\w.:-]*)/.exec(text.slice(index, index + 200));
      if (!match?.[1]) return { kind: 'none' };
      const name = match[1];
      const local = name.slice(name.indexOf(':') + 1).toLowerCase();
      if (local === 'html' || local === 'head' || local === 'body') return { kind: 'html' };
      // An HTML doctype in front of a feed root happens (copy-pasted templates): the root decides.
      if (htmlDoctype && !FEED_ROOTS.has(local)) return { kind: 'html' };
      return { kind: 'xml', text: repairTruncatedEnd(text), root: local };
    } else {
      return { kind: 'none' };
    }
  }
}

/** A body cut right inside its last closing tag (`…</rss`) is completed; nothing else is repaired. */
function repairTruncatedEnd(text: string): string {
  const tail = text.slice(-200).trimEnd();
  return /<\/[A-Za-z_][\w.:-]*$/.test(tail) ? `${text.trimEnd()}>` : text;
}

// ---------------------------------------------------------------------------------------------------------
// URL helpers

function absoluteUrl(ref: string | undefined, base: string | undefined): string | undefined {
  if (ref === undefined) return undefined;
  const trimmed = ref.trim();
  if (trimmed === '') return undefined;
  try {
    return new URL(trimmed, base).href;
  } catch {
    return undefined;
  }
}

function httpUrl(ref: string | undefined, base: string | undefined): string | undefined {
  const url = absoluteUrl(ref, base);
  return url !== undefined && /^https?:\/\//i.test(url) ? url : undefined;
}

function absoluteHttpUrl(ref: string | undefined): string | undefined {
  return ref !== undefined && /^\s*https?:\/\//i.test(ref) ? httpUrl(ref, undefined) : undefined;
}

/** Resolves an xml:base against the outer base; an unusable xml:base leaves the outer base in force. */
function withXmlBase(xmlBase: string | undefined, outer: string | undefined): string | undefined {
  return absoluteUrl(xmlBase, outer) ?? outer;
}

// ---------------------------------------------------------------------------------------------------------
// Field helpers

type TextKind = 'text' | 'html';

function cleanText(value: unknown, kind: TextKind): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = kind === 'html' ? htmlToText(value) : plainText(value);
  return text === '' ? undefined : text;
}

/** RSS/RDF fields are routinely HTML-escaped one level deeper than XML: decode once more, no tag stripping. */
function escapedText(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = collapseWhitespace(decodeEntities(value));
  return text === '' ? undefined : text;
}

const BASE64_RE = /^[A-Za-z0-9+/\s]+={0,2}\s*$/;

/** Atom text construct (RFC 4287 §3.1) or `atom:content` → plain text. */
function atomText(construct: AtomFeed.Text | AtomFeed.Content | undefined): string | undefined {
  if (!construct || typeof construct.value !== 'string') return undefined;
  const type = (construct.type ?? '').trim().toLowerCase();
  if (type === '' || type === 'text' || type === 'text/plain') return cleanText(construct.value, 'text');
  if (type === 'html' || type === 'xhtml' || type.includes('html')) return cleanText(construct.value, 'html');
  if (type.startsWith('text/') || type.endsWith('+xml') || type.endsWith('/xml')) {
    return cleanText(construct.value, 'text');
  }
  // Any other media type carries base64 (RFC 4287 §4.1.3.3 rule 5).
  if (BASE64_RE.test(construct.value)) {
    const decoded = Buffer.from(construct.value.replace(/\s+/g, ''), 'base64').toString('utf8');
    return cleanText(decoded, 'text');
  }
  return cleanText(construct.value, 'text');
}

/** "jane@example.com (Jane Doe)" → "Jane Doe"; anything else unchanged. */
function personName(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const match = /^\S+@\S+\s*\(([^()]{1,200})\)$/.exec(value);
  return match?.[1]?.trim() || value;
}

function firstString(values: readonly unknown[] | undefined): string | undefined {
  return values?.find((value): value is string => typeof value === 'string' && value.trim() !== '');
}

function firstDate(...candidates: unknown[]): Date | undefined {
  for (const candidate of candidates) {
    const date = parseFeedDate(candidate);
    if (date) return date;
  }
  return undefined;
}

function trimmedId(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return undefined;
  const id = value.trim();
  return id === '' ? undefined : id;
}

function isAlternate(link: AtomFeed.Link<string>): boolean {
  return !link.rel || link.rel.toLowerCase() === 'alternate';
}

function isHtml(link: AtomFeed.Link<string>): boolean {
  return !link.type || link.type.toLowerCase().includes('html');
}

function pickAtomLink(links: readonly AtomFeed.Link<string>[] | undefined): string | undefined {
  const usable = (links ?? []).filter((link) => typeof link.href === 'string' && link.href.trim() !== '');
  return (usable.find((link) => isAlternate(link) && isHtml(link)) ?? usable.find(isAlternate) ?? undefined)
    ?.href;
}

// ---------------------------------------------------------------------------------------------------------
// Per-format normalisation. Each produces draft items: the id is only a candidate (guid/id), links resolved.

interface DraftItem {
  guid?: string | undefined;
  link?: string | undefined;
  title?: string | undefined;
  published?: Date | undefined;
  summary?: string | undefined;
  author?: string | undefined;
}

/**
 * A parsed feed seen through one format: its title, its raw items and how one raw item becomes a draft.
 * Per item, so that a large feed can be normalised in slices.
 */
interface Shape<T> {
  title: string | undefined;
  items: readonly T[];
  draft(item: T): DraftItem;
}

function siteBase(siteLink: string | undefined, base: string | undefined): string | undefined {
  return httpUrl(siteLink, base) ?? base;
}

function rssShape(feed: RssFeed.Feed<string>, baseUrl: string | undefined): Shape<RssFeed.Item<string>> {
  // Relative links in RSS are relative to the site (channel <link>) more often than to the feed file.
  const feedBase = siteBase(feed.link, withXmlBase(feed.xml?.base, baseUrl));
  return {
    title: cleanText(feed.title ?? firstString(feed.dc?.titles), 'html'),
    items: feed.items ?? [],
    draft(item) {
      const base = withXmlBase(item.xml?.base, feedBase);
      const guid = trimmedId(item.guid?.value);
      // A permalink guid doubles as the link, but only when it already is an absolute web URL.
      const guidLink = item.guid?.isPermaLink === false ? undefined : absoluteHttpUrl(guid);
      return {
        guid,
        link:
          httpUrl(item.link, base) ?? httpUrl(pickAtomLink(item.atom?.links), base) ?? guidLink ?? undefined,
        title: cleanText(item.title ?? firstString(item.dc?.titles), 'html'),
        published: firstDate(
          item.pubDate,
          ...(item.dc?.dates ?? []),
          ...(item.dcterms?.issued ?? []),
          ...(item.dcterms?.created ?? []),
          item.atom?.published,
          ...(item.dcterms?.modified ?? []),
          item.atom?.updated,
        ),
        summary: cleanText(item.description ?? item.content?.encoded, 'html'),
        author:
          personName(escapedText(item.authors?.[0]?.name ?? item.authors?.[0]?.email)) ??
          escapedText(firstString(item.dc?.creators)),
      };
    },
  };
}

function rdfShape(feed: RdfFeed.Feed<string>, baseUrl: string | undefined): Shape<RdfFeed.Item<string>> {
  const feedBase = siteBase(feed.link, withXmlBase(feed.xml?.base, baseUrl));
  return {
    title: cleanText(feed.title ?? firstString(feed.dc?.titles), 'html'),
    items: feed.items ?? [],
    draft(item) {
      const base = withXmlBase(item.xml?.base, feedBase);
      const about = trimmedId(item.rdf?.about);
      return {
        guid: about,
        link: httpUrl(item.link, base) ?? absoluteHttpUrl(about),
        title: cleanText(item.title ?? firstString(item.dc?.titles), 'html'),
        published: firstDate(
          ...(item.dc?.dates ?? []),
          ...(item.dcterms?.issued ?? []),
          ...(item.dcterms?.created ?? []),
          ...(item.dcterms?.modified ?? []),
        ),
        summary: cleanText(item.description ?? item.content?.encoded, 'html'),
        author: escapedText(firstString(item.dc?.creators)),
      };
    },
  };
}

function atomShape(feed: AtomFeed.Feed<string>, baseUrl: string | undefined): Shape<AtomFeed.Entry<string>> {
  // Atom follows XML Base (RFC 4287 §2): entry xml:base, then feed xml:base, then the document URL.
  const feedBase = withXmlBase(feed.xml?.base, baseUrl);
  const feedAuthor = feed.authors?.find((person) => person.name)?.name;
  return {
    title: atomText(feed.title),
    items: feed.entries ?? [],
    draft(entry) {
      const base = withXmlBase(entry.xml?.base, feedBase);
      const content = entry.content?.src ? undefined : entry.content;
      return {
        guid: trimmedId(entry.id),
        link: httpUrl(pickAtomLink(entry.links), base),
        title: atomText(entry.title),
        published: firstDate(entry.published, entry.updated, ...(entry.dc?.dates ?? [])),
        summary: atomText(entry.summary) ?? atomText(content),
        author: plainTextOrUndefined(
          entry.authors?.find((person) => person.name)?.name ??
            entry.source?.authors?.find((person) => person.name)?.name ??
            feedAuthor ??
            firstString(entry.dc?.creators),
        ),
      };
    },
  };
}

function jsonShape(feed: JsonFeed.Feed<string>, baseUrl: string | undefined): Shape<JsonFeed.Item<string>> {
  const feedBase = siteBase(feed.home_page_url, baseUrl);
  const feedAuthor = feed.authors?.find((author) => author.name)?.name;
  return {
    title: cleanText(feed.title, 'text'),
    items: feed.items ?? [],
    draft: (item): DraftItem => ({
      guid: trimmedId(item.id),
      link: httpUrl(item.url, feedBase) ?? httpUrl(item.external_url, feedBase),
      // JSON Feed titles and summaries are plain text by definition; only content_html is HTML.
      title: cleanText(item.title, 'text'),
      published: firstDate(item.date_published, item.date_modified),
      summary:
        cleanText(item.summary, 'text') ??
        cleanText(item.content_text, 'text') ??
        cleanText(item.content_html, 'html'),
      author: plainTextOrUndefined(item.authors?.find((author) => author.name)?.name ?? feedAuthor),
    }),
  };
}

function shapeOf(parsed: AnyFeed<string>, baseUrl: string | undefined): Shape<unknown> {
  if (parsed.format === 'rss') return rssShape(parsed.feed, baseUrl) as Shape<unknown>;
  if (parsed.format === 'atom') return atomShape(parsed.feed, baseUrl) as Shape<unknown>;
  if (parsed.format === 'rdf') return rdfShape(parsed.feed, baseUrl) as Shape<unknown>;
  return jsonShape(parsed.feed, baseUrl) as Shape<unknown>;
}

function plainTextOrUndefined(value: string | undefined): string | undefined {
  return value === undefined ? undefined : cleanText(value, 'text');
}

// ---------------------------------------------------------------------------------------------------------
// Identity

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function contentKey(item: DraftItem, withLink: boolean): string {
  const parts = [item.title ?? '', item.published?.toISOString() ?? '', item.summary ?? ''];
  if (withLink) parts.push(item.link ?? '');
  return parts.join('\n');
}

/**
 * guid/id → link → `h:` + sha256(title, published, summary). Later items repeating an id already used in
 * this feed get `#` + 16 hex digits of their content hash; exact repeats (same id, same content) are dropped.
 * One draft at a time, in document order, so that a large feed can be done in slices.
 */
function idAssigner(): { items: FeedItem[]; add(draft: DraftItem): void } {
  const used = new Set<string>();
  const items: FeedItem[] = [];
  return {
    items,
    add(draft) {
      let id = draft.guid ?? draft.link ?? `h:${sha256(contentKey(draft, false))}`;
      if (id.length > ID_MAX_CHARS) id = `h:${sha256(id)}`;
      if (used.has(id)) {
        const disambiguated = `${id}#${sha256(contentKey(draft, true)).slice(0, 16)}`;
        if (used.has(disambiguated)) return; // the same item repeated verbatim
        id = disambiguated;
      }
      used.add(id);
      items.push(toItem(id, draft));
    },
  };
}

function toItem(id: string, draft: DraftItem): FeedItem {
  const summary = draft.summary === undefined ? undefined : truncateText(draft.summary, SUMMARY_MAX_CHARS);
  const title =
    draft.title ??
    (summary === undefined ? undefined : truncateText(summary, TITLE_FROM_SUMMARY_CHARS)) ??
    draft.link ??
    UNTITLED;
  const item: FeedItem = { id, title };
  if (draft.link !== undefined) item.link = draft.link;
  if (draft.published !== undefined) item.published = draft.published;
  if (summary !== undefined) item.summary = summary;
  if (draft.author !== undefined) item.author = draft.author;
  return item;
}

// ---------------------------------------------------------------------------------------------------------

function failure(code: FeedParseErrorCode, error: string): ParseFeedResult {
  return { ok: false, code, error };
}

function describe(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error instanceof Error ? error.message : String(error)}${cause}`.slice(0, 300);
}

function parseXmlDocument(text: string, root: string): AnyFeed<string> {
  const byRoot: Record<string, (value: string) => AnyFeed<string>> = {
    rss: (value) => ({ format: 'rss', feed: parseRssFeed(value) }),
    feed: (value) => ({ format: 'atom', feed: parseAtomFeed(value) }),
    rdf: (value) => ({ format: 'rdf', feed: parseRdfFeed(value) }),
  };
  const parser = byRoot[root];
  if (parser) {
    try {
      return parser(text);
    } catch (error) {
      // A well-formed document of the root's format in which the library found no known element at all
      // (e.g. an empty `<feed/>`): that is an empty feed, not a broken one.
      if (error instanceof ParseError) return emptyFeed(root);
      if (!(error instanceof DetectError)) throw error;
      // The root says one format but the content did not look like it: let the generic detection try.
    }
  }
  return parseAnyFeed(text);
}

function emptyFeed(root: string): AnyFeed<string> {
  if (root === 'feed') return { format: 'atom', feed: {} as AtomFeed.Feed<string> };
  if (root === 'rdf') return { format: 'rdf', feed: {} as RdfFeed.Feed<string> };
  return { format: 'rss', feed: {} as RssFeed.Feed<string> };
}

/** The body's text as a feed of the library (before normalisation), or why it is none. */
function parseDocument(text: string): ParseFeedResult | AnyFeed<string> {
  const first = /\S/.exec(text.slice(0, 4096));
  if (!first) return failure('FEED_EMPTY', 'the response body is empty; the server returned no feed');
  if (first[0] === '{' || first[0] === '[') {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      return failure(
        'FEED_MALFORMED',
        `the body starts like JSON but is not valid JSON (${describe(error)})`,
      );
    }
    return jsonFeedOf(json) ?? parseAnyFeed(json);
  }
  const prolog = inspectProlog(text);
  if (prolog.kind !== 'xml') return prologFailure(prolog);
  return parseXmlDocument(prolog.text, prolog.root);
}

/** A JSON value that cannot be a JSON Feed, as a failure; `undefined` when it may be one. */
function jsonFeedOf(json: unknown): ParseFeedResult | undefined {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return failure('FEED_UNRECOGNIZED', 'the body is JSON but not a JSON Feed object; check the feed URL');
  }
  return undefined;
}

function prologFailure(prolog: Exclude<Prolog, { kind: 'xml' }>): ParseFeedResult {
  if (prolog.kind === 'html') {
    return failure(
      'FEED_HTML_PAGE',
      'the body is an HTML page, not a feed; check that the URL points at the feed itself (not the site) ' +
        'and that the server is not showing an error or challenge page',
    );
  }
  if (prolog.kind === 'empty') {
    return failure('FEED_EMPTY', 'the body has no root element; the server returned no feed');
  }
  return failure('FEED_UNRECOGNIZED', 'the body is neither XML nor JSON; check the feed URL');
}

function isFailure(value: ParseFeedResult | AnyFeed<string>): value is ParseFeedResult {
  return 'ok' in value;
}

function normalize(parsed: AnyFeed<string>, baseUrl: string | undefined): ParsedFeed {
  const shape = shapeOf(parsed, baseUrl);
  const ids = idAssigner();
  for (const raw of shape.items) ids.add(shape.draft(raw));
  const feed: ParsedFeed = { format: parsed.format, items: ids.items };
  if (shape.title !== undefined) feed.title = shape.title;
  return feed;
}

function failureOf(error: unknown): ParseFeedResult {
  if (error instanceof DetectError) {
    return failure('FEED_UNRECOGNIZED', 'the body is not RSS, Atom, RDF or JSON Feed; check the feed URL');
  }
  if (error instanceof MalformedError || error instanceof ParseError) {
    return failure('FEED_MALFORMED', `the feed could not be parsed (${describe(error)})`);
  }
  return failure('FEED_PARSE_FAILED', `unexpected failure while parsing the feed (${describe(error)})`);
}

/**
 * Parses an RSS 0.9x/1.0/2.0, Atom 0.3/1.0, RDF or JSON Feed 1.x body. Never throws: every failure is
 * returned as `{ ok: false, code, error }`. Entities declared in a DTD are never expanded.
 */
export function parseFeed(body: Buffer | Uint8Array, options: ParseFeedOptions): ParseFeedResult {
  try {
    if (!(body instanceof Uint8Array)) {
      return failure('FEED_BODY_INVALID', 'the feed body must be a Buffer or Uint8Array');
    }
    const baseUrl = absoluteUrl(options?.baseUrl, undefined);
    const { text, encoding } = decodeBody(body, options?.contentType);
    const parsed = parseDocument(text);
    if (isFailure(parsed)) return parsed;
    return { ok: true, feed: normalize(parsed, baseUrl), encoding };
  } catch (error) {
    return failureOf(error);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Large feeds in slices. One parse of a 40 000-item feed holds the event loop for about a second, so a large
// body is cut into its items (a light tag scan), the items are parsed in batches wrapped in the document's own
// root and channel start tags (namespaces and xml:base kept), and everything after runs in slices too. The
// result is the one `parseFeed` gives; a document the scan cannot follow is parsed whole, as before.

export interface ParseFeedAsyncOptions extends ParseFeedOptions {
  /** Work between two yields to the event loop, in ms. Default 8. */
  sliceMs?: number;
  /** Bodies with fewer characters are parsed in one go. Default 256 KiB. */
  minSlicedChars?: number;
  /** Items per parsed batch. Default 100. */
  batchItems?: number;
}

const MIN_SLICED_CHARS = 256 * 1024;
const BATCH_ITEMS = 100;
// JSON Feeds are shallow; a deeper body is refused before anything recursive walks it.
const JSON_FEED_MAX_DEPTH = 64;

/**
 * Like `parseFeed`, yielding to the event loop every `sliceMs` of work on a large body; a JSON body is also
 * refused when it nests deeper than 64 levels. Never throws.
 */
export async function parseFeedAsync(
  body: Buffer | Uint8Array,
  options: ParseFeedAsyncOptions,
): Promise<ParseFeedResult> {
  if (!(body instanceof Uint8Array)) return parseFeed(body, options);
  try {
    const slicer = timeSlicer(options.sliceMs ?? 8);
    const baseUrl = absoluteUrl(options.baseUrl, undefined);
    const { text, encoding } = decodeBody(body, options.contentType);
    const json = /^\s*[[{]/.test(text.slice(0, 4096));
    let result: ParseFeedResult | ParsedFeed;
    if (json || text.length >= (options.minSlicedChars ?? MIN_SLICED_CHARS)) {
      await slicer.maybeYield();
      result = await parseFeedSliced(text, baseUrl, slicer, options.batchItems ?? BATCH_ITEMS);
    } else {
      const parsed = parseDocument(text);
      result = isFailure(parsed) ? parsed : normalize(parsed, baseUrl);
    }
    return 'ok' in result ? result : { ok: true, feed: result, encoding };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'HTTP_JSON_TOO_DEEP')
      return failure(
        'FEED_MALFORMED',
        `the JSON body nests objects and arrays deeper than ${JSON_FEED_MAX_DEPTH} levels; it is refused`,
      );
    if (code === 'HTTP_INVALID_JSON')
      return failure(
        'FEED_MALFORMED',
        `the body starts like JSON but is not valid JSON (${describe(error)})`,
      );
    return failureOf(error);
  }
}

/** `normalize` in slices. */
async function normalizeSliced(
  parsed: AnyFeed<string>,
  baseUrl: string | undefined,
  slicer: TimeSlicer,
): Promise<ParsedFeed> {
  const shape = shapeOf(parsed, baseUrl);
  const ids = idAssigner();
  for (const raw of shape.items) {
    ids.add(shape.draft(raw));
    await slicer.maybeYield();
  }
  return feedOf(parsed.format, shape.title, ids.items);
}

function feedOf(format: FeedFormat, title: string | undefined, items: FeedItem[]): ParsedFeed {
  const feed: ParsedFeed = { format, items };
  if (title !== undefined) feed.title = title;
  return feed;
}

/**
 * The feed's own fields from the document without its items, then the items batch by batch, each batch
 * normalised at once (its parse tree is garbage before the next batch is parsed). Anything unexpected in a
 * piece (no format detected without the items, a batch read as another format, items the scan did not see,
 * a parse error) and the whole document is parsed as `parseFeed` does: same result, same error.
 */
async function parseFeedSliced(
  text: string,
  baseUrl: string | undefined,
  slicer: TimeSlicer,
  batchItems: number,
): Promise<ParseFeedResult | ParsedFeed> {
  const first = /\S/.exec(text.slice(0, 4096));
  if (!first) return failure('FEED_EMPTY', 'the response body is empty; the server returned no feed');
  const whole = (parse: () => AnyFeed<string>): Promise<ParsedFeed> =>
    normalizeSliced(parse(), baseUrl, slicer);
  const inBatches = async (
    envelopeOf: () => AnyFeed<string>,
    count: number,
    batchOf: (from: number, to: number) => AnyFeed<string>,
    fallback: () => AnyFeed<string>,
  ): Promise<ParsedFeed> => {
    let envelope: AnyFeed<string>;
    try {
      envelope = envelopeOf();
    } catch {
      return whole(fallback);
    }
    if (itemsOf(envelope).length > 0) return whole(fallback);
    const shape = shapeOf(envelope, baseUrl);
    const ids = idAssigner();
    await slicer.maybeYield();
    for (let i = 0; i < count; i += batchItems) {
      let batch: AnyFeed<string>;
      try {
        batch = batchOf(i, Math.min(i + batchItems, count));
      } catch {
        return whole(fallback);
      }
      if (batch.format !== envelope.format) return whole(fallback);
      // A batch is normalised before the next yield: its parse tree then dies young, never promoted to the
      // old generation, where it would stay until a full GC long after the tick.
      for (const raw of itemsOf(batch)) ids.add(shape.draft(raw));
      await slicer.maybeYield();
    }
    return feedOf(envelope.format, shape.title, ids.items);
  };

  if (first[0] === '{' || first[0] === '[') {
    const json = await parseJsonAsync(text, { maxDepth: JSON_FEED_MAX_DEPTH });
    const notFeed = jsonFeedOf(json);
    if (notFeed) return notFeed;
    const { items, ...rest } = json as { items?: unknown };
    if (!Array.isArray(items) || items.length === 0) return whole(() => parseAnyFeed(json));
    return inBatches(
      () => parseAnyFeed({ ...rest, items: [] }),
      items.length,
      (from, to) => parseAnyFeed({ ...rest, items: items.slice(from, to) }),
      () => parseAnyFeed(json),
    );
  }
  const prolog = inspectProlog(text);
  if (prolog.kind !== 'xml') return prologFailure(prolog);
  const doc = prolog.text;
  const layout = await scanItems(doc, prolog.root, slicer);
  if (!layout || layout.items.length === 0) return whole(() => parseXmlDocument(doc, prolog.root));
  const spans = layout.items;
  const count = spans.length / 2;
  return inBatches(
    () => {
      const gaps: string[] = [];
      let from = 0;
      for (let k = 0; k < spans.length; k += 2) {
        gaps.push(doc.slice(from, spans[k]));
        from = spans[k + 1]!;
      }
      gaps.push(doc.slice(from));
      return parseXmlDocument(gaps.join(''), prolog.root);
    },
    count,
    (from, to) =>
      parseXmlDocument(
        `${layout.open}${doc.slice(spans[2 * from], spans[2 * to - 1])}${layout.close}`,
        prolog.root,
      ),
    () => parseXmlDocument(doc, prolog.root),
  );
}

function itemsOf(parsed: AnyFeed<string>): readonly unknown[] {
  if (parsed.format === 'atom') return parsed.feed.entries ?? [];
  return parsed.feed.items ?? [];
}

interface ItemLayout {
  /** The root's (and for RSS the channel's) start tags, verbatim: namespaces and xml:base included. */
  open: string;
  /** The matching end tags. */
  close: string;
  /** start, end (exclusive) of every item element, in document order, flat: one array, not one per item. */
  items: number[];
}

const NAME = /[^\s/>]+/y;

function localName(name: string): string {
  return name.slice(name.indexOf(':') + 1).toLowerCase();
}

/**
 * Where the items are: `<item>` children of the first `<channel>` of an `<rss>` root, `<item>` children of an
 * RDF root, `<entry>` children of an Atom `<feed>`. `undefined` when the document is not one the scan can
 * follow (mismatched tags, an unclosed comment, a second channel): it is then parsed whole.
 */
async function scanItems(doc: string, root: string, slicer: TimeSlicer): Promise<ItemLayout | undefined> {
  if (root !== 'rss' && root !== 'rdf' && root !== 'feed') return undefined;
  const itemName = root === 'feed' ? 'entry' : 'item';
  // Items are children of the element at this depth: the channel for RSS, the root otherwise.
  const containerDepth = root === 'rss' ? 2 : 1;
  const stack: string[] = [];
  // The start tags (and names) of the root and, for RSS, the channel.
  const starts: string[] = [];
  const names: string[] = [];
  const items: number[] = [];
  let itemStart = -1;
  let i = 0;
  let tags = 0;
  for (;;) {
    if (++tags % 256 === 0) await slicer.maybeYield();
    const lt = doc.indexOf('<', i);
    if (lt === -1) break;
    if (doc.startsWith('<!--', lt)) {
      const end = doc.indexOf('-->', lt + 4);
      if (end === -1) return undefined;
      i = end + 3;
      continue;
    }
    if (doc.startsWith('<![CDATA[', lt)) {
      const end = doc.indexOf(']]>', lt + 9);
      if (end === -1) return undefined;
      i = end + 3;
      continue;
    }
    if (doc.startsWith('<?', lt)) {
      const end = doc.indexOf('?>', lt + 2);
      if (end === -1) return undefined;
      i = end + 2;
      continue;
    }
    if (doc.startsWith('<!', lt)) return undefined;
    const closing = doc.charCodeAt(lt + 1) === 47; // '/'
    NAME.lastIndex = lt + (closing ? 2 : 1);
    const name = NAME.exec(doc)?.[0];
    if (!name) return undefined;
    // The end of the tag, past any quoted attribute value that holds a '>'.
    let gt = NAME.lastIndex;
    for (;;) {
      const c = doc.charCodeAt(gt);
      if (Number.isNaN(c)) return undefined;
      if (c === 62) break; // '>'
      if (c === 34 || c === 39) {
        const q = doc.indexOf(c === 34 ? '"' : "'", gt + 1);
        if (q === -1) return undefined;
        gt = q + 1;
      } else gt++;
    }
    i = gt + 1;
    if (closing) {
      if (stack.pop() !== name) return undefined;
      if (itemStart !== -1 && stack.length === containerDepth) {
        items.push(itemStart, i);
        itemStart = -1;
      }
      continue;
    }
    const selfClosing = doc.charCodeAt(gt - 1) === 47;
    const depth = stack.length;
    if (depth === 0 || (root === 'rss' && depth === 1 && localName(name) === 'channel')) {
      // A second root or channel, or an empty one: not a layout this scan follows.
      if (starts.length !== depth || selfClosing) return undefined;
      starts.push(doc.slice(lt, i));
      names.push(name);
    } else if (
      depth === containerDepth &&
      stack[containerDepth - 1] === names[containerDepth - 1] &&
      localName(name) === itemName
    ) {
      if (selfClosing) items.push(lt, i);
      else itemStart = lt;
    }
    if (!selfClosing) stack.push(name);
  }
  if (stack.length !== 0 || starts.length !== containerDepth) return undefined;
  const close = names
    .toReversed()
    .map((n) => `</${n}>`)
    .join('');
  return { open: starts.join(''), close, items };
}
