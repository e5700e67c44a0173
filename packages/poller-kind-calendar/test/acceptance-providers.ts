/**
 * The calendar providers the shared acceptance cases run against, behind one small adapter: the loopback
 * Google Calendar API fake (with the fake token endpoint) and a real Radicale over CalDAV. A case creates,
 * changes and deletes events and can make the provider refuse the sync tokens it issued.
 */
import { icsEvent, startRadicale, type RadicaleServer } from '../src/testing.js';
import { startCalendarFixture } from './helpers.js';

/** An event as a case writes it: every event starts 2026-03-05 10:00 in Europe/Madrid. */
interface CaseEvent {
  key: string;
  summary: string;
  /** `cancelled`: the event stays, with STATUS:CANCELLED (Google: `status: cancelled`). */
  status?: 'confirmed' | 'cancelled';
}

/** One case's own calendar. */
export interface CaseCalendar {
  /** The block of `accounts.<name>` in plugins/calendar.yaml that follows this calendar. */
  readonly account: Record<string, unknown>;
  /** Values the logs and statuses must hide. */
  readonly secrets: string[];
  /** Creates the event, or replaces it (a new version). */
  put(...events: CaseEvent[]): Promise<void>;
  remove(key: string): Promise<void>;
  /** Every sync token issued so far is refused at the next sync that has changes. */
  invalidateSyncTokens(): void;
  close(): Promise<void>;
}

export interface CalendarProvider {
  readonly name: 'google' | 'caldav';
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A new, empty calendar; `now` is the case's clock (change times come from it). */
  calendar(now: () => number): Promise<CaseCalendar>;
}

const googleProvider: CalendarProvider = {
  name: 'google',
  async start() {},
  async stop() {},
  async calendar(now) {
    const f = await startCalendarFixture(now);
    return {
      account: f.accountBlock,
      secrets: [f.tokens.refreshToken, f.tokens.clientSecret],
      async put(...events) {
        f.cal.put(
          ...events.map((e) => ({
            id: e.key,
            summary: e.summary,
            ...(e.status ? { status: e.status } : {}),
            start: { dateTime: '2026-03-05T10:00:00+01:00', timeZone: 'Europe/Madrid' },
            end: { dateTime: '2026-03-05T11:00:00+01:00', timeZone: 'Europe/Madrid' },
          })),
        );
      },
      remove: async (key) => f.cal.remove(key),
      invalidateSyncTokens: () => f.cal.expireSyncTokens(),
      close: () => f.close(),
    };
  },
};

/** iCalendar UTC time, `20260301T120000Z`. */
const icalUtc = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/** Radicale, one calendar collection per case; events carry CREATED and LAST-MODIFIED as clients write them. */
function radicaleProvider(): CalendarProvider {
  let server: RadicaleServer;
  let calendars = 0;
  return {
    name: 'caldav',
    async start() {
      server = await startRadicale();
    },
    async stop() {
      await server?.stop();
    },
    async calendar(now) {
      const cal = await server.calendar(`case${++calendars}`);
      const created = new Map<string, number>();
      // A second per change, so that changes made together keep their order in LAST-MODIFIED.
      let changes = 0;
      return {
        account: {
          provider: 'caldav',
          url: cal.calendarUrl,
          user: server.user,
          password: server.password,
          allow_private_networks: true,
        },
        secrets: [server.password],
        async put(...events) {
          for (const e of events) {
            const at = now() + 1000 * changes++;
            if (!created.has(e.key)) created.set(e.key, at);
            const ics = icsEvent({
              uid: e.key,
              summary: e.summary,
              start: 'TZID=Europe/Madrid:20260305T100000',
              end: 'TZID=Europe/Madrid:20260305T110000',
              stamp: icalUtc(at),
              lines: [
                `CREATED:${icalUtc(created.get(e.key)!)}`,
                `LAST-MODIFIED:${icalUtc(at)}`,
                ...(e.status ? [`STATUS:${e.status.toUpperCase()}`] : []),
              ],
            });
            const status = await cal.put(e.key, ics);
            if (status !== 201 && status !== 204) throw new Error(`PUT ${e.key} answered ${status}`);
          }
        },
        async remove(key) {
          const status = await cal.remove(key);
          if (status !== 200 && status !== 204) throw new Error(`DELETE ${key} answered ${status}`);
        },
        invalidateSyncTokens: () => cal.forgetSyncTokens(),
        async close() {},
      };
    },
  };
}

export const calendarProviders: CalendarProvider[] = [googleProvider, radicaleProvider()];
