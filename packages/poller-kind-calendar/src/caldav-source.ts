/**
 * The `calendar` kind over CalDAV: RFC 6578 `sync-collection` REPORTs through the guarded HTTP client.
 * The first tick baselines with the returned token; later ticks send it, follow truncated answers (a 507
 * for the collection) with the new token, read changed members with `calendar-multiget`, and report
 * removed members (404) as cancellations. An invalid token (403 `DAV:valid-sync-token`, 409, or 410) is
 * Permanent, like Google's 410: `reset` re-baselines. The cursor also keeps a short digest of each member
 * href, so that a member the job had not seen before is `created` and a known one `updated`.
 */
import { createHash } from 'node:crypto';
import {
  PermanentError,
  TransientError,
  type PollerHttp,
  type PollItem,
  type TickContext,
} from '@agent/poller-core';
import type { CaldavAccount } from './account.js';
import type { CalendarConfig } from './config.js';
import { isInvalidSyncToken, parseMultistatus, type DavResponse } from './dav-xml.js';
import { formatIcalTime, nextInstance, parseEvents } from './ical.js';
import { changeOf } from './render.js';

/** Truncated answers one sync follows before it gives up (Transient). */
const MAX_SYNC_ROUNDS = 100;
/** Members one calendar-multiget asks for. */
const MULTIGET_BATCH = 100;

/** The CalDAV cursor: the sync token and the digests of the collection's members at that token. */
type CaldavCursor = { sync_token: string; members: string[] };

/** A member's digest: 72 bits of the SHA-256 of its path (12 characters in the cursor). */
function memberKey(base: string, href: string): string {
  return createHash('sha256').update(new URL(href, base).pathname).digest('base64url').slice(0, 12);
}

export interface CaldavShared {
  readonly provider: 'caldav';
  readonly accountName: string;
  readonly account: CaldavAccount;
  close(): void;
}

const syncBody = (token: string) =>
  `<?xml version="1.0" encoding="utf-8"?><D:sync-collection xmlns:D="DAV:"><D:sync-token>${escapeXml(token)}</D:sync-token><D:sync-level>1</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>`;

const multigetBody = (hrefs: string[]) =>
  `<?xml version="1.0" encoding="utf-8"?><C:calendar-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/><C:calendar-data/></D:prop>${hrefs.map((h) => `<D:href>${escapeXml(h)}</D:href>`).join('')}</C:calendar-multiget>`;

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The collection a job follows: `primary` is the account URL; another id is a collection on the same origin. */
function collectionUrl(account: CaldavAccount, calendarId: string): string {
  if (calendarId === 'primary') return account.url;
  const u = new URL(calendarId.endsWith('/') ? calendarId : `${calendarId}/`, account.url);
  if (u.origin !== new URL(account.url).origin)
    throw new PermanentError(
      `calendar_id "${calendarId}" is on another origin than the account url; use a path relative to the account url`,
    );
  return u.href;
}

async function report(
  http: PollerHttp,
  shared: CaldavShared,
  url: string,
  body: string,
  depth: string | undefined,
): Promise<string> {
  const auth = Buffer.from(`${shared.account.user}:${shared.account.password}`).toString('base64');
  // guarded-http errors pass through: the runner classifies refusals Permanent, network failures Transient.
  const res = await http.request(url, {
    method: 'REPORT',
    headers: {
      'content-type': 'application/xml; charset=utf-8',
      authorization: `Basic ${auth}`,
      ...(depth ? { depth } : {}),
    },
    body,
    allowPrivateNetworks: shared.account.allowPrivateNetworks,
  });
  const text = res.text();
  const who = `calendar account "${shared.accountName}" (caldav)`;
  if (res.status === 207) return text;
  if (res.status === 410 || ((res.status === 403 || res.status === 409) && isInvalidSyncToken(text)))
    throw new PermanentError(
      `${who}: the server no longer accepts the sync token (${res.status}); run \`agent pollers reset <job> --yes\` and resume to re-baseline`,
    );
  if (res.status === 401)
    throw new PermanentError(`${who}: authentication failed (401); check user and password`);
  if (res.status === 403 || res.status === 404)
    throw new PermanentError(`${who}: the collection answered ${res.status}; check url and calendar_id`);
  throw new TransientError(
    `${who}: REPORT answered ${res.status}; retrying later`,
    res.retryAfterMs !== undefined ? { retryAfterMs: res.retryAfterMs } : {},
  );
}

/** Every change since `token` (empty: the whole collection), following truncated answers. */
async function syncAll(http: PollerHttp, shared: CaldavShared, url: string, token: string) {
  const changed = new Map<string, string>();
  const removed = new Map<string, string>();
  let t = token;
  const self = new URL(url).pathname;
  for (let round = 0; round < MAX_SYNC_ROUNDS; round++) {
    const ms = parseMultistatus(await report(http, shared, url, syncBody(t), undefined));
    if (!ms.syncToken) throw new TransientError('the CalDAV server answered a sync without a sync token');
    let truncated = false;
    for (const r of ms.responses) {
      const path = new URL(r.href, url).pathname;
      if (path === self || path === self.replace(/\/$/, '')) {
        truncated ||= r.status === 507;
        continue;
      }
      if (r.status === 404) {
        changed.delete(r.href);
        removed.set(r.href, t);
      } else {
        removed.delete(r.href);
        changed.set(r.href, r.etag ?? '');
      }
    }
    t = ms.syncToken;
    if (!truncated) return { changed, removed, token: t };
  }
  throw new TransientError(`the CalDAV sync was still truncated after ${MAX_SYNC_ROUNDS} rounds`);
}

/**
 * `isNew`: the member was not in the collection at the previous token (`undefined` when that is not known,
 * for a cursor written without member digests: then CREATED and LAST-MODIFIED decide, as Google's times do).
 */
function eventItem(
  r: DavResponse,
  base: string,
  now: Date,
  isNew: boolean | undefined,
): { item: PollItem; at: number; cancelled: boolean } {
  const events = parseEvents(r.calendarData ?? '');
  const e = events.find((x) => !x.recurrenceId) ?? events[0];
  const link = new URL(r.href, base).href;
  const status = e?.status ?? 'confirmed';
  const updated = e?.lastModified
    ? new Date(e.lastModified.endsWith('Z') ? e.lastModified : `${e.lastModified}Z`).toISOString()
    : '';
  const next = e ? nextInstance(e, now) : undefined;
  const fields: Record<string, string> = {
    summary: e?.summary || '(no title)',
    start: formatIcalTime(e?.start),
    end: formatIcalTime(e?.end),
    html_link: link,
    status,
    id: e?.uid ?? r.href,
    location: e?.location ?? '',
    updated,
    change:
      status === 'cancelled' || isNew === undefined
        ? changeOf({ status, created: e?.created ? `${e.created.replace(/Z?$/, 'Z')}` : undefined, updated })
        : isNew
          ? 'created'
          : 'updated',
    next: next ? formatIcalTime(next) : '',
  };
  const at = Date.parse(updated);
  return {
    item: { id: `${r.href}@${r.etag ?? ''}`, fields },
    at: Number.isFinite(at) ? at : Number.POSITIVE_INFINITY,
    cancelled: status === 'cancelled',
  };
}

async function readMembers(
  http: PollerHttp,
  shared: CaldavShared,
  url: string,
  hrefs: string[],
): Promise<DavResponse[]> {
  const out: DavResponse[] = [];
  for (let i = 0; i < hrefs.length; i += MULTIGET_BATCH) {
    const ms = parseMultistatus(
      await report(http, shared, url, multigetBody(hrefs.slice(i, i + MULTIGET_BATCH)), '1'),
    );
    out.push(...ms.responses.filter((r) => r.status === 200 && r.calendarData));
  }
  return out;
}

/** The member digests of a stored cursor; `undefined` when it has none (written by an older version). */
function membersOf(cursor: unknown): string[] | undefined {
  const m = cursor && typeof cursor === 'object' ? (cursor as { members?: unknown }).members : undefined;
  return Array.isArray(m) && m.every((x) => typeof x === 'string') ? m : undefined;
}

export async function caldavTick(
  ctx: TickContext<CalendarConfig, { sync_token: string; members?: string[] }, unknown>,
  shared: CaldavShared,
  token: string | null,
): Promise<{ items: PollItem[]; cursor: CaldavCursor }> {
  const { config, http, logger } = ctx;
  const url = collectionUrl(shared.account, config.calendar_id);
  const sync = await syncAll(http, shared, url, token ?? '');
  const keyOf = (href: string) => memberKey(url, href);
  if (token === null) {
    // Baseline: the runner records these ids and delivers nothing.
    const items = [...sync.changed].map(([href, etag]) => ({ id: `${href}@${etag}`, fields: {} }));
    logger.debug('calendar sync listed', { mode: 'full', events: items.length });
    return { items, cursor: { sync_token: sync.token, members: [...sync.changed.keys()].map(keyOf).sort() } };
  }
  const before = membersOf(ctx.cursor);
  const known = before ? new Set(before) : undefined;
  let members: Set<string>;
  if (known) {
    members = new Set(known);
    for (const href of sync.changed.keys()) members.add(keyOf(href));
    for (const href of sync.removed.keys()) members.delete(keyOf(href));
  } else {
    // A cursor without digests: the members now come from one full listing (etags only).
    members = new Set([...(await syncAll(http, shared, url, '')).changed.keys()].map(keyOf));
  }
  const read = (await readMembers(http, shared, url, [...sync.changed.keys()])).map((r) =>
    eventItem(r, url, ctx.now(), known ? !known.has(keyOf(r.href)) : undefined),
  );
  const kept = read.filter((x) => !(config.skip_cancelled && x.cancelled));
  kept.sort((a, b) => a.at - b.at);
  const items = kept.map((x) => x.item);
  if (!config.skip_cancelled)
    for (const [href, from] of sync.removed)
      items.push({
        id: `${href}@deleted:${from}`,
        fields: {
          summary: '',
          start: '',
          end: '',
          html_link: new URL(href, url).href,
          status: 'cancelled',
          id: href,
          location: '',
          updated: '',
          change: 'cancelled',
          next: '',
        },
      });
  logger.debug('calendar sync listed', {
    mode: 'incremental',
    changed: sync.changed.size,
    removed: sync.removed.size,
  });
  return { items, cursor: { sync_token: sync.token, members: [...members].sort() } };
}
