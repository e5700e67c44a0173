/**
 * A small iCalendar (RFC 5545) reader for what the kind renders: the VEVENTs of a calendar object with
 * UID, SUMMARY, LOCATION, STATUS, DTSTART/DTEND (all-day, UTC, floating or with TZID), RRULE and
 * LAST-MODIFIED. Pure; unknown properties and components are ignored.
 */

export interface IcalTime {
  /** `2026-03-05` or `2026-03-05T10:00:00` (wall time), with `Z` appended for UTC. */
  value: string;
  allDay: boolean;
  /** TZID parameter, when given. */
  tzid?: string;
}

export interface IcalEvent {
  uid: string;
  summary: string;
  location: string;
  /** Lower case: `confirmed`, `tentative`, `cancelled`. */
  status: string;
  start?: IcalTime;
  end?: IcalTime;
  rrule?: string;
  /** Set on an overridden instance of a recurring event. */
  recurrenceId?: string;
  lastModified?: string;
  created?: string;
}

interface Prop {
  name: string;
  params: Record<string, string>;
  value: string;
}

function unfold(text: string): string[] {
  return text
    .replace(/\r\n/g, '\n')
    .replace(/\n[ \t]/g, '')
    .split('\n')
    .filter((l) => l.length > 0);
}

function propOf(line: string): Prop | undefined {
  // The value starts at the first colon outside a quoted parameter value.
  let quoted = false;
  let i = 0;
  for (; i < line.length; i++) {
    if (line[i] === '"') quoted = !quoted;
    else if (line[i] === ':' && !quoted) break;
  }
  if (i >= line.length) return undefined;
  const [name, ...rawParams] = line.slice(0, i).split(';');
  const params: Record<string, string> = {};
  for (const p of rawParams) {
    const eq = p.indexOf('=');
    if (eq > 0) params[p.slice(0, eq).toUpperCase()] = p.slice(eq + 1).replace(/^"(.*)"$/, '$1');
  }
  return { name: name!.toUpperCase(), params, value: line.slice(i + 1) };
}

function unescapeText(v: string): string {
  return v.replace(/\\([\\;,nN])/g, (_m, c: string) => (c === 'n' || c === 'N' ? '\n' : c));
}

function timeOf(p: Prop): IcalTime | undefined {
  const d = /^(\d{4})(\d{2})(\d{2})$/.exec(p.value);
  if (d) return { value: `${d[1]}-${d[2]}-${d[3]}`, allDay: true };
  const t = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$/.exec(p.value);
  if (!t) return undefined;
  const value = `${t[1]}-${t[2]}-${t[3]}T${t[4]}:${t[5]}:${t[6]}${t[7]}`;
  return p.params.TZID && !t[7] ? { value, allDay: false, tzid: p.params.TZID } : { value, allDay: false };
}

/** The VEVENTs of an iCalendar object (a VCALENDAR with one or more events). */
export function parseEvents(ics: string): IcalEvent[] {
  const out: IcalEvent[] = [];
  let cur: IcalEvent | null = null;
  let depth = 0;
  for (const line of unfold(ics)) {
    const p = propOf(line);
    if (!p) continue;
    if (p.name === 'BEGIN') {
      if (p.value.toUpperCase() === 'VEVENT' && !cur) {
        cur = { uid: '', summary: '', location: '', status: 'confirmed' };
        depth = 0;
      } else if (cur) depth++;
      continue;
    }
    if (p.name === 'END') {
      if (cur && depth === 0 && p.value.toUpperCase() === 'VEVENT') {
        out.push(cur);
        cur = null;
      } else if (cur) depth--;
      continue;
    }
    if (!cur || depth > 0) continue; // properties of a VALARM inside the event are not the event's
    if (p.name === 'UID') cur.uid = p.value;
    else if (p.name === 'SUMMARY') cur.summary = unescapeText(p.value);
    else if (p.name === 'LOCATION') cur.location = unescapeText(p.value);
    else if (p.name === 'STATUS') cur.status = p.value.toLowerCase();
    else if (p.name === 'RRULE') cur.rrule = p.value;
    else if (p.name === 'RECURRENCE-ID') cur.recurrenceId = p.value;
    else if (p.name === 'CREATED') cur.created = timeOf(p)?.value;
    else if (p.name === 'LAST-MODIFIED' || (p.name === 'DTSTAMP' && !cur.lastModified)) {
      const t = timeOf(p);
      if (t) cur.lastModified = t.value;
    } else if (p.name === 'DTSTART' || p.name === 'DTEND') {
      const t = timeOf(p);
      if (t) cur[p.name === 'DTSTART' ? 'start' : 'end'] = t;
    }
  }
  return out;
}

/** `2026-03-05 (all day)`, `2026-03-05 10:00 Europe/Madrid`, `2026-03-05 10:00 UTC`, `2026-03-05 10:00`. */
export function formatIcalTime(t: IcalTime | undefined): string {
  if (!t) return '';
  if (t.allDay) return `${t.value} (all day)`;
  const wall = `${t.value.slice(0, 10)} ${t.value.slice(11, 16)}`;
  if (t.value.endsWith('Z')) return `${wall} UTC`;
  return t.tzid ? `${wall} ${t.tzid}` : wall;
}

const STEP: Record<string, (d: Date, n: number) => void> = {
  DAILY: (d, n) => d.setUTCDate(d.getUTCDate() + n),
  WEEKLY: (d, n) => d.setUTCDate(d.getUTCDate() + 7 * n),
  MONTHLY: (d, n) => d.setUTCMonth(d.getUTCMonth() + n),
  YEARLY: (d, n) => d.setUTCFullYear(d.getUTCFullYear() + n),
};

/**
 * The first instance of a recurring event starting after `after`, on the wall clock of its DTSTART
 * (so `10:00 Europe/Madrid` stays 10:00 across daylight-saving changes). Handles FREQ with INTERVAL,
 * COUNT and UNTIL; a rule with BY* parts (or none) gives `undefined` rather than a wrong date.
 */
export function nextInstance(e: IcalEvent, after: Date): IcalTime | undefined {
  if (!e.rrule || !e.start) return undefined;
  const rule = Object.fromEntries(
    e.rrule
      .split(';')
      .map((kv) => kv.split('=') as [string, string])
      .map(([k, v]) => [k.toUpperCase(), v]),
  );
  const step = STEP[rule.FREQ?.toUpperCase() ?? ''];
  if (!step || Object.keys(rule).some((k) => k.startsWith('BY') || k === 'BYSETPOS')) return undefined;
  const interval = Math.max(1, Number(rule.INTERVAL ?? 1) || 1);
  const count = rule.COUNT ? Number(rule.COUNT) : Infinity;
  const until = rule.UNTIL
    ? Date.parse(timeOf({ name: 'UNTIL', params: {}, value: rule.UNTIL })?.value ?? '')
    : Infinity;
  // Wall time as if UTC: the comparison with `after` is off by the zone offset at most (hours), which
  // only matters for an instance starting within those hours.
  const start = e.start.allDay ? `${e.start.value}T00:00:00Z` : e.start.value.replace(/Z?$/, 'Z');
  const d = new Date(start);
  for (let i = 0; i < count && i < 100_000; i++) {
    if (d.getTime() > until) return undefined;
    if (d.getTime() > after.getTime()) {
      const iso = d.toISOString();
      const value = e.start.allDay
        ? iso.slice(0, 10)
        : `${iso.slice(0, 19)}${e.start.value.endsWith('Z') ? 'Z' : ''}`;
      return { ...e.start, value };
    }
    step(d, interval);
  }
  return undefined;
}
