/** Template fields of a calendar event, including minimal cancelled payloads (only `id` and `status`). */

export interface EventTime {
  date?: unknown;
  dateTime?: unknown;
  timeZone?: unknown;
}

export interface CalendarEvent {
  id?: unknown;
  status?: unknown;
  summary?: unknown;
  location?: unknown;
  htmlLink?: unknown;
  created?: unknown;
  updated?: unknown;
  etag?: unknown;
  start?: EventTime | null;
  end?: EventTime | null;
  /** On a cancelled instance of a recurring event (which may carry nothing else). */
  originalStartTime?: EventTime | null;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function validZone(tz: string): boolean {
  try {
    return Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone.length > 0;
  } catch {
    return false;
  }
}

/**
 * `2026-03-05 (all day)` for a `date`; for a `dateTime`, the wall time in the event's own `timeZone`
 * (`2026-03-05 10:00 Europe/Madrid`), or as written with its offset when no usable zone is given
 * (`2026-03-05 10:00 +01:00`). Empty when absent.
 */
export function formatEventTime(t: EventTime | null | undefined): string {
  if (!t || typeof t !== 'object') return '';
  const date = str(t.date);
  if (/^\d{4}-\d{2}-\d{2}$/.test(date)) return `${date} (all day)`;
  const dt = str(t.dateTime);
  const ms = Date.parse(dt);
  if (!dt || Number.isNaN(ms)) return dt;
  const tz = str(t.timeZone);
  if (tz && validZone(tz)) {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-CA', {
        timeZone: tz,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      })
        .formatToParts(ms)
        .map((p) => [p.type, p.value]),
    );
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} ${tz}`;
  }
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$/.exec(dt);
  if (!m) return dt;
  return `${m[1]} ${m[2]} ${m[3] === 'Z' || !m[3] ? 'UTC' : m[3]}`;
}

/** `cancelled`, `created` (created and updated within 2 s), or `updated`. */
export function changeOf(e: CalendarEvent): 'cancelled' | 'created' | 'updated' {
  if (e.status === 'cancelled') return 'cancelled';
  const c = Date.parse(str(e.created));
  const u = Date.parse(str(e.updated));
  return Number.isFinite(c) && Number.isFinite(u) && Math.abs(u - c) < 2000 ? 'created' : 'updated';
}

/** Dedup id: the event id plus its version, so an update of a seen event is delivered again. */
export function itemIdOf(e: CalendarEvent): string {
  const version = str(e.updated) || str(e.etag) || str(e.status) || 'v';
  return `${str(e.id)}@${version}`;
}

export function eventFields(e: CalendarEvent): Record<string, string> {
  return {
    summary: str(e.summary) || (e.status === 'cancelled' ? '' : '(no title)'),
    start: formatEventTime(e.start ?? e.originalStartTime),
    end: formatEventTime(e.end),
    html_link: str(e.htmlLink),
    status: str(e.status) || 'confirmed',
    id: str(e.id),
    location: str(e.location),
    updated: str(e.updated),
    change: changeOf(e),
    next: '',
  };
}
