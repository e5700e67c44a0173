/** The `calendar` poller kind: incremental sync with sync tokens. */
import { createAccountClient, type RefreshTokenClient } from '@agent/oauth2';
import { CALENDAR_API_BASE_URL, calendarProviderOf, parseCaldavAccount } from './account.js';
import { caldavTick, type CaldavShared } from './caldav-source.js';
import {
  definePollerKind,
  PermanentError,
  TransientError,
  type JsonValue,
  type PollerKind,
  type PollItem,
  type SharedContext,
} from '@agent/poller-core';
import { createCalendarApi, EVENTS_PAGE_SIZE, type CalendarApi } from './api.js';
import { CALENDAR_PLACEHOLDERS, calendarConfigSchema, type CalendarConfig } from './config.js';
import { eventFields, itemIdOf, type CalendarEvent } from './render.js';

/** Pages one sync may walk before it gives up (Transient): 1000 x 250 events. */
const MAX_PAGES_PER_SYNC = 1000;

/** The per-(agent, kind) resource: one OAuth2 client shared by that agent's calendar jobs. */
interface GoogleCalendarShared {
  readonly provider: 'google';
  readonly accountName: string;
  readonly oauth: RefreshTokenClient;
  readonly api: CalendarApi;
  close(): void;
}

export type CalendarShared = GoogleCalendarShared | CaldavShared;

/**
 * The cursor: the `nextSyncToken` of the last page of the previous sync (Google), or the sync token and the
 * digests of the collection's members (CalDAV).
 */
export type CalendarCursor = { sync_token: string; members?: string[] };

function createCalendarShared(ctx: SharedContext): CalendarShared {
  if (ctx.account && calendarProviderOf(ctx.account.config) === 'caldav') {
    try {
      const account = parseCaldavAccount(ctx.account.config);
      return { provider: 'caldav', accountName: ctx.account.name, account, close: () => {} };
    } catch (err) {
      throw new PermanentError(
        `calendar account "${ctx.account.name}" (plugins/calendar.yaml accounts.${ctx.account.name}): ${(err as Error).message}`,
      );
    }
  }
  let built;
  try {
    built = createAccountClient({
      plugin: 'calendar',
      agentId: ctx.agentId,
      account: ctx.account,
      apiBaseUrl: CALENDAR_API_BASE_URL,
      http: ctx.http,
      logger: ctx.logger,
    });
  } catch (err) {
    // A missing or malformed account needs the operator: the job pauses.
    throw new PermanentError((err as Error).message, { cause: err });
  }
  const { account, accountName, client: oauth } = built;
  const api = createCalendarApi({
    client: oauth,
    apiBaseUrl: account.apiBaseUrl,
    account: accountName,
    allowPrivateNetworks: account.allowPrivateNetworks,
  });
  return { provider: 'google', accountName, oauth, api, close: () => oauth.close() };
}

/** Sort key: the `updated` instant; events without one sort last. */
function changedAt(e: CalendarEvent): number {
  const t = typeof e.updated === 'string' ? Date.parse(e.updated) : NaN;
  return Number.isFinite(t) ? t : Number.POSITIVE_INFINITY;
}

function syncTokenOf(stored: CalendarCursor | null): string | null {
  if (stored === null) return null;
  // Stored JSON: read it as any value, not trusting the type.
  const cursor: JsonValue = stored;
  const t =
    typeof cursor === 'object' && cursor !== null && !Array.isArray(cursor) ? cursor.sync_token : undefined;
  if (typeof t === 'string' && t) return t;
  // A cursor we cannot read must not turn into a full listing that would deliver every event.
  throw new PermanentError(
    'the stored calendar cursor is unreadable; run `agent pollers reset <job>` to re-baseline',
  );
}

/**
 * Request parameters. With a sync token only `syncToken`, `pageToken`, `maxResults` and `singleEvents`
 * are sent: Google refuses timeMin, timeMax, updatedMin, orderBy, q, iCalUID and the extended-property
 * filters with it, and implies `showDeleted`.
 */
function eventsParams(
  config: CalendarConfig,
  syncToken: string | null,
  pageToken?: string,
): Record<string, string> {
  const p: Record<string, string> = { maxResults: String(EVENTS_PAGE_SIZE) };
  if (config.single_events) p.singleEvents = 'true';
  if (syncToken) p.syncToken = syncToken;
  if (pageToken) p.pageToken = pageToken;
  return p;
}

/** The `calendar` kind; register it with the poller runtime. */
export const calendarPollerKind: PollerKind<CalendarConfig, CalendarCursor, CalendarShared> =
  definePollerKind({
    kind: 'calendar',
    apiVersion: 1,
    configSchema: calendarConfigSchema,
    placeholders: CALENDAR_PLACEHOLDERS,
    credentials: 'calendar',
    createShared: createCalendarShared,
    sourceKey: (c) => `${c.calendar_id}${c.single_events ? '|single' : ''}`,
    async tick(ctx) {
      const { config, shared, signal, logger } = ctx;
      const syncToken = syncTokenOf(ctx.cursor);
      if (shared.provider === 'caldav') return caldavTick(ctx, shared, syncToken);
      const events: CalendarEvent[] = [];
      let pageToken: string | undefined;
      let nextSyncToken: string | undefined;
      // Every page first: Google sends nextSyncToken on the last page only.
      for (let pages = 0; ; pages++) {
        if (pages >= MAX_PAGES_PER_SYNC)
          throw new TransientError(
            `calendar sync stopped after ${MAX_PAGES_PER_SYNC} pages without a sync token`,
          );
        const page = await shared.api.listEvents(
          config.calendar_id,
          eventsParams(config, syncToken, pageToken),
          signal,
        );
        events.push(...page.items);
        if (page.nextPageToken) {
          pageToken = page.nextPageToken;
          continue;
        }
        nextSyncToken = page.nextSyncToken;
        break;
      }
      if (!nextSyncToken)
        throw new TransientError('the calendar API ended a listing without nextSyncToken; retrying later');
      const kept = config.skip_cancelled ? events.filter((e) => e.status !== 'cancelled') : events;
      // Oldest change first; events without `updated` (minimal cancelled ones) keep their order at the end.
      const sorted = kept.map((e, i) => ({ e, i, t: changedAt(e) })).sort((a, b) => a.t - b.t || a.i - b.i);
      const items: PollItem[] = sorted.map(({ e }) => ({ id: itemIdOf(e), fields: eventFields(e) }));
      logger.debug('calendar sync listed', {
        mode: syncToken ? 'incremental' : 'full',
        events: events.length,
        skipped_cancelled: events.length - kept.length,
      });
      return { items, cursor: { sync_token: nextSyncToken } };
    },
  });
