/**
 * A loopback fake of the Calendar API v3 `events.list`, written from the public reference and the sync
 * guide: `maxResults` (default 250, at most 2500), `pageToken`/`nextPageToken`, `nextSyncToken` on the
 * last page only, `syncToken` refused with timeMin/timeMax/updatedMin/orderBy/q/iCalUID/extended
 * properties or `showDeleted=false` (400), deleted events as minimal `{kind, etag, id, status:
 * "cancelled"}` in incremental results, 410 `fullSyncRequired` for expired tokens, bearer auth, and
 * Google's JSON error shape. Listing order is deliberately not chronological.
 * This module needs vitest: its real-server helpers come from `@agent/poller-core/testing`.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeEvent {
  id: string;
  status?: string;
  summary?: string;
  location?: string;
  start?: { date?: string; dateTime?: string; timeZone?: string };
  end?: { date?: string; dateTime?: string; timeZone?: string };
  /** Deleted: only a minimal cancelled payload is returned. */
  deleted?: boolean;
}

interface Stored {
  event: FakeEvent;
  seq: number;
  created: string;
  updated: string;
}

export interface CalendarRequest {
  calendarId: string;
  params: Record<string, string>;
}

const FORBIDDEN_WITH_SYNC = [
  'timeMin',
  'timeMax',
  'updatedMin',
  'orderBy',
  'q',
  'iCalUID',
  'privateExtendedProperty',
  'sharedExtendedProperty',
];

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
  res.end(JSON.stringify(body));
}

function googleError(status: number, reason: string, message = `Fake ${status}`) {
  return { error: { code: status, message, errors: [{ domain: 'global', reason, message }] } };
}

export interface FakeCalendar {
  readonly url: string;
  readonly requests: CalendarRequest[];
  /** Creates or replaces events (each change gets a new `updated`). */
  put(...events: FakeEvent[]): void;
  /** Deletes an event: incremental syncs return it as a minimal cancelled payload. */
  remove(id: string): void;
  /** Every sync token issued so far answers 410. */
  expireSyncTokens(): void;
  fail(status: number, reason: string, times?: number, retryAfter?: string): void;
  hang(): void;
  close(): Promise<void>;
}

export async function startFakeCalendar(opts: {
  isValid: (token: string) => boolean;
  now: () => number;
  calendarId?: string;
}): Promise<FakeCalendar> {
  const calendarId = opts.calendarId ?? 'primary';
  const events = new Map<string, Stored>();
  const requests: CalendarRequest[] = [];
  let seq = 0;
  let validFrom = 0;
  let fault: { status: number; reason: string; times: number; retryAfter?: string } | null = null;
  let hanging = false;
  const hung: ServerResponse[] = [];

  const stamp = () => new Date(opts.now() + seq).toISOString();

  const resource = (s: Stored) =>
    s.event.deleted
      ? { kind: 'calendar#event', etag: `"e${s.seq}"`, id: s.event.id, status: 'cancelled' }
      : {
          kind: 'calendar#event',
          etag: `"e${s.seq}"`,
          id: s.event.id,
          status: s.event.status ?? 'confirmed',
          htmlLink: `https://calendar.example/event?eid=${s.event.id}`,
          created: s.created,
          updated: s.updated,
          ...(s.event.summary !== undefined ? { summary: s.event.summary } : {}),
          ...(s.event.location !== undefined ? { location: s.event.location } : {}),
          start: s.event.start ?? { dateTime: '2026-03-05T10:00:00+01:00', timeZone: 'Europe/Madrid' },
          end: s.event.end ?? { dateTime: '2026-03-05T11:00:00+01:00', timeZone: 'Europe/Madrid' },
        };

  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const m = /^\/calendar\/v3\/calendars\/([^/]+)\/events$/.exec(u.pathname);
    const params = Object.fromEntries(u.searchParams);
    if (m) requests.push({ calendarId: decodeURIComponent(m[1]!), params });
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !opts.isValid(auth.slice(7)))
      return send(res, 401, googleError(401, 'authError', 'Invalid Credentials'));
    if (!m || req.method !== 'GET') return send(res, 404, googleError(404, 'notFound', 'Not Found'));
    if (decodeURIComponent(m[1]!) !== calendarId)
      return send(res, 404, googleError(404, 'notFound', 'Not Found'));
    if (hanging) return void hung.push(res);
    if (fault && fault.times > 0) {
      fault.times--;
      return send(
        res,
        fault.status,
        googleError(fault.status, fault.reason),
        fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
      );
    }
    const syncToken = params.syncToken;
    if (syncToken && (FORBIDDEN_WITH_SYNC.some((k) => k in params) || params.showDeleted === 'false'))
      return send(
        res,
        400,
        googleError(400, 'invalid', 'Sync token cannot be used with other request restrictions.'),
      );
    let from = 0;
    if (syncToken) {
      const n = Number(/^sync-(\d+)$/.exec(syncToken)?.[1] ?? NaN);
      if (!Number.isFinite(n) || n < validFrom)
        return send(
          res,
          410,
          googleError(410, 'fullSyncRequired', 'Sync token is no longer valid, a full sync is required.'),
        );
      from = n;
    }
    const max = Math.min(2500, Number(params.maxResults ?? 250) || 250);
    // The page token pins the listing to the state at its first page.
    const [offset, upto] = params.pageToken
      ? (params.pageToken.split('.').map(Number) as [number, number])
      : [0, seq];
    const showDeleted = syncToken ? true : params.showDeleted === 'true';
    const all = [...events.values()]
      .filter((s) => s.seq <= upto && s.seq > from)
      .filter((s) => showDeleted || !(s.event.deleted || s.event.status === 'cancelled'))
      .sort((a, b) => (a.event.id < b.event.id ? 1 : a.event.id > b.event.id ? -1 : 0));
    const page = all.slice(offset, offset + max);
    const last = offset + max >= all.length;
    return send(res, 200, {
      kind: 'calendar#events',
      summary: 'me@example.com',
      items: page.map(resource),
      ...(last ? { nextSyncToken: `sync-${upto}` } : { nextPageToken: `${offset + max}.${upto}` }),
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    put(...list) {
      for (const e of list) {
        seq++;
        const prev = events.get(e.id);
        const updated = stamp();
        events.set(e.id, { event: e, seq, created: prev?.created ?? updated, updated });
      }
    },
    remove(id) {
      const prev = events.get(id);
      if (!prev) return;
      seq++;
      events.set(id, { ...prev, event: { id, deleted: true }, seq, updated: stamp() });
    },
    expireSyncTokens() {
      validFrom = seq + 1;
    },
    fail(status, reason, times = 1, retryAfter) {
      fault = { status, reason, times, ...(retryAfter ? { retryAfter } : {}) };
    },
    hang() {
      hanging = true;
    },
    async close() {
      for (const r of hung) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
/** A real Radicale CalDAV server on a free loopback port, for tests of hosts and of this kind */
export { startRadicale, type RadicaleCalendar, type RadicaleServer } from './radicale-server.js';
/** The body of a PUT to it: an iCalendar object of one event */
export { icsEvent, type IcsEventSpec } from './ics-event.js';
