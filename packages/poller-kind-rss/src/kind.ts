/**
 * The `rss` poller kind: a conditional GET of the feed, then the parsed items oldest first. The runner
 * owns everything after the fetch (baseline, seen set, `max_per_tick`, delivery, cursor commit).
 */
import { createHash } from 'node:crypto';
import {
  asPollerError,
  definePollerKind,
  httpConfigProperties,
  httpRequestLimits,
  maxItemsConsidered,
  statusFailure,
  TransientError,
  withBaseConfig,
  type JsonValue,
  type PollerKind,
  type TickContext,
  type TickResult,
} from '@agent/poller-core';
import { orderOldestFirst } from './order.js';
import { RSS_PLACEHOLDERS, rssTemplateFields } from './template.js';
import { safeUrl, urlProblems } from '@agent/guarded-http';
import type { FromSchema } from 'json-schema-to-ts';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

// The feed parser (hundreds of modules) loads with the first feed, not with the daemon: a daemon without
// rss jobs never loads it.
let feedModule: Promise<typeof import('./feed.js')> | undefined;
const feedParser = () => (feedModule ??= import('./feed.js'));

/** The cursor: the feed's validators, stored verbatim (quotes and `W/` kept). */
export type RssCursor = { etag?: string; last_modified?: string };

const RSS_DEFAULT_MAX_PER_TICK = 10;

export const rssConfigSchema = withBaseConfig({
  additionalProperties: false,
  required: ['feed_url'],
  properties: {
    feed_url: {
      type: 'string',
      minLength: 1,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description: 'The feed (RSS 0.9x–2.0, RDF, Atom, JSON Feed); http or https.',
    },
    max_per_tick: {
      type: 'integer',
      minimum: 1,
      default: RSS_DEFAULT_MAX_PER_TICK,
      description: 'Items delivered per tick at most; the rest wait for the next tick.',
    },
    ...httpConfigProperties,
  },
});

/** Config of an `rss` job, defaults filled in: what `rssConfigSchema` accepts. */
export type RssConfig = FromSchema<typeof rssConfigSchema>;

const ACCEPT =
  'application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5';
// Validators are echoed verbatim; one that could not be sent safely is dropped.
const VALIDATOR_MAX_CHARS = 1024;
const UNSAFE_HEADER_VALUE = /[\r\n\0]/;

function cleanValidator(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' && v.length <= VALIDATOR_MAX_CHARS && !UNSAFE_HEADER_VALUE.test(v)
    ? v
    : undefined;
}

/** Validators of a stored cursor; anything unexpected reads as none. */
function cursorValidators(cursor: JsonValue | null): RssCursor {
  if (!cursor || typeof cursor !== 'object' || Array.isArray(cursor)) return {};
  const etag = cleanValidator(cursor.etag);
  const lastModified = cleanValidator(cursor.last_modified);
  return {
    ...(etag !== undefined ? { etag } : {}),
    ...(lastModified !== undefined ? { last_modified: lastModified } : {}),
  };
}

/** Validators of a response. On a 304 a validator the server left out keeps its previous value. */
function validatorsOf(headers: Record<string, string>, previous: RssCursor | null): RssCursor {
  const etag = cleanValidator(headers.etag) ?? previous?.etag;
  const lastModified = cleanValidator(headers['last-modified']) ?? previous?.last_modified;
  return {
    ...(etag !== undefined ? { etag } : {}),
    ...(lastModified !== undefined ? { last_modified: lastModified } : {}),
  };
}

async function tick(ctx: TickContext<RssConfig, RssCursor>): Promise<TickResult<RssCursor>> {
  const { config } = ctx;
  // Only a failure names the request: an unchanged feed (most ticks) parses no URL for it.
  const what = () => `GET ${safeUrl(config.feed_url)}`;
  const sent = cursorValidators(ctx.cursor);
  const headers: Record<string, string> = { accept: ACCEPT };
  if (sent.etag !== undefined) headers['if-none-match'] = sent.etag;
  if (sent.last_modified !== undefined) headers['if-modified-since'] = sent.last_modified;

  let res;
  try {
    res = await ctx.http.request(config.feed_url, {
      headers,
      ...httpRequestLimits(config),
    });
  } catch (err) {
    throw asPollerError(err, what());
  }

  // The leading run of permanent redirects is where feed_url now lives.
  let moved: string | undefined;
  for (const hop of res.redirects) {
    if (hop.status !== 301 && hop.status !== 308) break;
    moved = hop.url;
  }
  if (moved !== undefined)
    ctx.logger.warn('rss feed moved permanently; update feed_url', {
      feed_url: safeUrl(config.feed_url),
      new_url: safeUrl(moved),
    });

  if (res.status === 304) {
    if (sent.etag === undefined && sent.last_modified === undefined)
      throw new TransientError(`${what()}: the server answered 304 to a request without validators`);
    // Nothing changed: no parse, validators refreshed (RFC 9111 §4.3.4).
    return { items: [], notModified: true, cursor: { ...validatorsOf(res.headers, sent) } };
  }
  if (res.status < 200 || res.status >= 300) {
    // A bot-protection page (e.g. `cf-mitigated: challenge`) will not let an automated client in later.
    const challenged = res.headers['cf-mitigated']?.toLowerCase() === 'challenge';
    // 401, 403, 404, 410 and the other 4xx are Permanent; 408, 425, 429 and 5xx Transient (the default).
    throw statusFailure(res, {
      what: what(),
      hint: challenged
        ? 'a bot challenge (cf-mitigated) blocks automated clients; ask the site for access or use another URL'
        : 'check feed_url, then resume the job',
    });
  }

  // In slices: a feed of 40 000 items would otherwise hold the event loop for a second or more.
  const { parseFeedAsync } = await feedParser();
  const parsed = await parseFeedAsync(res.body, {
    contentType: res.headers['content-type'],
    baseUrl: res.url,
  });
  if (!parsed.ok) throw new TransientError(`${what()}: ${parsed.code}: ${parsed.error}`);
  let ordered = orderOldestFirst(parsed.feed.items);
  const cap = maxItemsConsidered(config);
  if (ordered.length > cap) {
    // Logged once per job definition by the runner, then counted.
    ctx.logger.warn('rss considered only the newest items of a large feed', {
      considered: cap,
      dropped: ordered.length - cap,
      hint: 'raise max_items_considered if the feed really lists more new items per tick',
    });
    ordered = ordered.slice(-cap);
  }
  // The fields keep only the feed's title: the items left out can be collected while the tick goes on.
  const feed = { title: parsed.feed.title };
  return {
    items: ordered.map((item) => ({ id: item.id, fields: rssTemplateFields(item, feed) })),
    cursor: { ...validatorsOf(res.headers, null) },
  };
}

/** The `rss` kind: RSS / Atom / JSON Feed with conditional GET. */
export const rssPollerKind: PollerKind<RssConfig, RssCursor> = definePollerKind({
  kind: 'rss',
  apiVersion: 1,
  configSchema: rssConfigSchema,
  placeholders: RSS_PLACEHOLDERS,
  validate(config) {
    return urlProblems('feed_url', config.feed_url, config.allow_private_networks === true);
  },
  sourceKey(config) {
    return sourceKeyOfUrl(config.feed_url);
  },
  tick,
});

/**
 * The feed URL, with its query string (which may hold a token, and lands in the state db) replaced by
 * its SHA-256: a changed query is still a changed source.
 */
export function sourceKeyOfUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (!u.search) return u.href;
    return `${safeUrl(u)}?sha256:${sha256(u.search)}`;
  } catch {
    return raw;
  }
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}
