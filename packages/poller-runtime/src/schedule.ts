/**
 * Schedules as pure functions of time (ms since the epoch): `every_secs`, 6-field `cron` in an IANA
 * `tz`, and one-shot `at`. cron-parser parses the expression and picks matching calendar days (in UTC,
 * where it has no DST to get wrong); the wall-clock to instant step, and so the DST policy, is ours:
 *
 * - A wall time skipped by a spring-forward gap fires once, shifted forward by the length of the gap
 *   (02:30 in New York on a spring-forward day fires at 03:30 EDT; 02:15 on Lord Howe fires at 02:45).
 * - A wall time repeated by a fall-back overlap fires once, at its first occurrence, unless the hour
 *   field is `*`: then the job fires in both repeated hours (real elapsed time keeps its spacing).
 */
import { CronExpressionParser } from 'cron-parser';

export type ScheduleSpec =
  { every_secs: number } | { cron: string; tz?: string; stagger_jitter_ms?: number } | { at: string };

export interface Schedule {
  readonly type: 'every' | 'cron' | 'at';
  /** Canonical text of the schedule; a persisted `next_run_at` is reused only while this is unchanged. */
  readonly key: string;
  /** The job's own jitter bound (`stagger_jitter_ms`), if it has one. */
  readonly ownJitterMs: number | undefined;
  /** `at` instant in ms. */
  readonly atMs: number | undefined;
  /** First slot for a job that has never run: `every_secs` now, `cron` the next fire time, `at` its instant. */
  firstSlot(now: number): number | null;
  /** The next nominal slot strictly after `now`, on the grid of `prevSlot` (missed slots are skipped). */
  slotAfter(prevSlot: number, now: number): number | null;
  /** Interval for lease TTL and backoff caps: `every_secs`; cron: gap between its next two fire times; `at`: 30 s. */
  intervalMs(now: number): number;
}

export type ParseResult =
  | { ok: true; schedule: Schedule }
  /** `field`: the schedule key at fault; `hint`: what to write instead. */
  | { ok: false; errors: string[]; field?: 'every_secs' | 'cron' | 'tz' | 'at'; hint?: string };

const CRON_FIELDS =
  'six fields: second 0-59, minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-7 (0 and 7 are Sunday), e.g. "0 */5 * * * *"';

const DAY = 86_400_000;
const HORIZON_DAYS = 366 * 10;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function parseSchedule(spec: ScheduleSpec): ParseResult {
  if ('every_secs' in spec) {
    const s = spec.every_secs;
    if (!Number.isSafeInteger(s) || s < 1)
      return {
        ok: false,
        errors: ['every_secs must be a whole number of seconds >= 1'],
        field: 'every_secs',
      };
    return { ok: true, schedule: everySchedule(s) };
  }
  if ('cron' in spec) return parseCron(spec.cron, spec.tz ?? 'UTC', spec.stagger_jitter_ms);
  if ('at' in spec) {
    const ms = parseRfc3339(spec.at);
    if (ms === null)
      return {
        ok: false,
        errors: [`at "${spec.at}" is not an RFC 3339 instant`],
        field: 'at',
        hint: 'write a date, a time and an offset, such as 2026-05-01T09:00:00Z or 2026-05-01T09:00:00+02:00',
      };
    return { ok: true, schedule: atSchedule(ms) };
  }
  return { ok: false, errors: ['needs exactly one of every_secs, cron, at'] };
}

export function parseRfc3339(text: string): number | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  if (mo! < 1 || mo! > 12 || d! < 1 || d! > daysInMonth(y!, mo!) || h! > 23 || mi! > 59 || s! > 60)
    return null;
  const ms = Date.parse(text.replace(' ', 'T'));
  return Number.isNaN(ms) ? null : ms;
}

function daysInMonth(y: number, m: number): number {
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

function everySchedule(secs: number): Schedule {
  const step = secs * 1000;
  return {
    type: 'every',
    key: `every_secs:${secs}`,
    ownJitterMs: undefined,
    atMs: undefined,
    firstSlot: (now) => now,
    slotAfter(prev, now) {
      if (prev > now) return prev;
      return prev + (Math.floor((now - prev) / step) + 1) * step;
    },
    intervalMs: () => step,
  };
}

function atSchedule(ms: number): Schedule {
  return {
    type: 'at',
    key: `at:${ms}`,
    ownJitterMs: undefined,
    atMs: ms,
    firstSlot: () => ms,
    slotAfter: () => null,
    intervalMs: () => 30_000,
  };
}

// ---- time zones ------------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

export function isValidTimeZone(tz: string): boolean {
  try {
    formatterFor(tz);
    return true;
  } catch {
    return false;
  }
}

function formatterFor(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(tz, f);
  }
  return f;
}

const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/GMT', 'GMT', 'Etc/Universal', 'Etc/Zulu']);
// Offsets by (zone, second): a tick asks for the same day boundaries again and again, and Intl is slow.
const offsetCache = new Map<string, number>();
const OFFSET_CACHE_MAX = 8192;

/** Offset of `tz` at `instant`: local wall time (as if UTC) minus the instant, in ms. */
export function zoneOffsetMs(tz: string, instant: number): number {
  if (UTC_ZONES.has(tz)) return 0;
  const base = Math.floor(instant / 1000) * 1000;
  const key = `${tz}|${base}`;
  const cached = offsetCache.get(key);
  if (cached !== undefined) return cached;
  const offset = computeZoneOffsetMs(tz, base);
  if (offsetCache.size >= OFFSET_CACHE_MAX) offsetCache.delete(offsetCache.keys().next().value!);
  offsetCache.set(key, offset);
  return offset;
}

function computeZoneOffsetMs(tz: string, base: number): number {
  const p: Record<string, number> = {};
  for (const part of formatterFor(tz).formatToParts(new Date(base)))
    if (part.type !== 'literal') p[part.type] = Number(part.value);
  const local = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour! % 24, p.minute!, p.second!);
  return local - base;
}

function nums(vals: readonly unknown[]): number[] {
  return [...new Set(vals.filter((v): v is number => typeof v === 'number'))].sort((a, b) => a - b);
}

// ---- cron ------------------------------------------------------------------------------------------

interface CronParts {
  seconds: number[];
  minutes: number[];
  hours: number[];
  hourWildcard: boolean;
  dayExpr: string;
  /** Day of month, month and day of week are all `*`: every day matches, no day parser needed. */
  everyDay: boolean;
}

function parseCron(expr: string, tz: string, jitter: number | undefined): ParseResult {
  const text = typeof expr === 'string' ? expr.trim() : '';
  const fields = text.split(/\s+/);
  if (text.startsWith('@') || fields.length !== 6)
    return {
      ok: false,
      errors: [`cron "${text}" has ${text.startsWith('@') ? 'a macro' : `${fields.length} fields`}`],
      field: 'cron',
      hint: `write ${CRON_FIELDS}`,
    };
  if (!isValidTimeZone(tz))
    return {
      ok: false,
      errors: [`tz "${tz}" is not an IANA time zone`],
      field: 'tz',
      hint: 'use a zone name such as Europe/Berlin, America/New_York or UTC',
    };
  let parts: CronParts;
  try {
    const parsed = CronExpressionParser.parse(text, { tz: 'UTC' });
    const f = parsed.fields;
    parts = {
      seconds: nums(f.second.values),
      minutes: nums(f.minute.values),
      hours: nums(f.hour.values),
      hourWildcard: fields[2] === '*',
      dayExpr: `0 0 0 ${fields[3]} ${fields[4]} ${fields[5]}`,
      everyDay: fields[3] === '*' && fields[4] === '*' && (fields[5] === '*' || fields[5] === '?'),
    };
    CronExpressionParser.parse(parts.dayExpr, { tz: 'UTC' });
  } catch (err) {
    return {
      ok: false,
      errors: [`cron "${text}" is invalid: ${(err as Error).message}`],
      field: 'cron',
      hint: `check each field against ${CRON_FIELDS}; no month has a day 30 of February or 31 of April`,
    };
  }
  let gapCache: { at: number; gap: number } | undefined;
  const schedule: Schedule = {
    type: 'cron',
    key: `cron:${text}|tz:${tz}`,
    ownJitterMs: jitter,
    atMs: undefined,
    firstSlot: (now) => nextCron(parts, tz, now),
    slotAfter: (prev, now) => nextCron(parts, tz, Math.max(prev, now)),
    intervalMs(now) {
      // Used for the lease TTL: an hour-old gap between two fire times is close enough, and saves two
      // cron searches per tick.
      if (gapCache && now >= gapCache.at && now - gapCache.at < 3_600_000) return gapCache.gap;
      const a = nextCron(parts, tz, now);
      const b = a === null ? null : nextCron(parts, tz, a);
      const gap = a !== null && b !== null ? b - a : DAY;
      gapCache = { at: now, gap };
      return gap;
    },
  };
  // Must fire within the horizon from now and from a fixed reference (reproducible errors).
  if (nextCron(parts, tz, Date.UTC(2026, 0, 1)) === null || nextCron(parts, tz, Date.now()) === null)
    return {
      ok: false,
      errors: [`cron "${text}" never fires (no matching date within 10 years)`],
      field: 'cron',
      hint: 'check day-of-month against month (February has 29 days at most, April, June, September and November 30)',
    };
  return { ok: true, schedule };
}

/** The first fire time of a cron strictly after `after`, or null if none within 10 years. */
function nextCron(parts: CronParts, tz: string, after: number): number | null {
  const localAfter = after + zoneOffsetMs(tz, after);
  const firstDay = Math.floor(localAfter / DAY) * DAY;
  if (parts.everyDay) {
    // Within two days there is always a fire time (every day has every listed hour).
    for (let day = firstDay; day <= firstDay + 2 * DAY; day += DAY) {
      const hit = firstInDay(parts, tz, day, after);
      if (hit !== null) return hit;
    }
    return null;
  }
  let days;
  try {
    days = CronExpressionParser.parse(parts.dayExpr, { tz: 'UTC', currentDate: new Date(firstDay - 1000) });
  } catch {
    return null;
  }
  for (;;) {
    let day: number;
    try {
      day = days.next().toDate().getTime();
    } catch {
      return null;
    }
    if (day > firstDay + HORIZON_DAYS * DAY) return null;
    const hit = firstInDay(parts, tz, day, after);
    if (hit !== null) return hit;
  }
}

function firstInDay(parts: CronParts, tz: string, dayLocal: number, after: number): number | null {
  const o1 = zoneOffsetMs(tz, dayLocal - zoneOffsetMs(tz, dayLocal));
  const dayEnd = dayLocal + DAY;
  const o2 = zoneOffsetMs(tz, dayEnd - zoneOffsetMs(tz, dayEnd));
  const { seconds, minutes, hours } = parts;
  const lastS = seconds[seconds.length - 1]!;
  const lastM = minutes[minutes.length - 1]!;
  if (o1 === o2) {
    // No transition this day: instant = wall time - offset, monotonic.
    const floor = after + o1;
    for (const h of hours) {
      const hBase = dayLocal + h * 3_600_000;
      if (hBase + lastM * 60_000 + lastS * 1000 <= floor) continue;
      for (const m of minutes) {
        const mBase = hBase + m * 60_000;
        if (mBase + lastS * 1000 <= floor) continue;
        for (const s of seconds) {
          const local = mBase + s * 1000;
          if (local > floor) return local - o1;
        }
      }
    }
    return null;
  }
  // A transition this day: find its instant, then map each wall time by the policy in the header.
  let lo = dayLocal - o1 - 3 * 3_600_000;
  let hi = dayEnd - o2 + 3 * 3_600_000;
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2000) * 1000;
    if (zoneOffsetMs(tz, mid) === o1) lo = mid;
    else hi = mid;
  }
  const t = hi;
  let best: number | null = null;
  const consider = (c: number) => {
    if (c > after && (best === null || c < best)) best = c;
  };
  for (const h of hours)
    for (const m of minutes)
      for (const s of seconds) {
        const local = dayLocal + h * 3_600_000 + m * 60_000 + s * 1000;
        const c1 = local - o1;
        const c2 = local - o2;
        const v1 = c1 < t;
        const v2 = c2 >= t;
        if (!v1 && !v2)
          consider(c1); // gap: shifted forward by the gap length
        else if (v1 && v2) {
          consider(c1); // overlap: first occurrence ...
          if (parts.hourWildcard) consider(c2); // ... and the second one for hourly-or-finer jobs
        } else consider(v1 ? c1 : c2);
      }
  return best;
}

// ---- jitter ----------------------------------------------------------------------------------------

/** Jitter bound of a job: `at` none, else `stagger_jitter_ms` or the global `default_jitter_ms`. */
export function jitterBound(schedule: Schedule, defaultJitterMs: number): number {
  if (schedule.type === 'at') return 0;
  return Math.max(0, schedule.ownJitterMs ?? defaultJitterMs);
}

/** `slot` plus a fresh uniform jitter in [0, bound). The nominal slot itself never moves. */
export function withJitter(slot: number, bound: number, random: () => number): number {
  if (bound <= 0) return slot;
  return slot + Math.min(bound - 1, Math.floor(random() * bound));
}

/** Lease TTL: max(minimum, factor x interval). */
export function leaseTtlMs(schedule: Schedule, factor: number, now: number, minimumMs = 30_000): number {
  return Math.max(minimumMs, Math.round(factor * schedule.intervalMs(now)));
}

/**
 * How long before its TTL runs out a holder stops trusting its lease: max(1 s, 10 % of the TTL), so a holder
 * whose clock or scheduling lags a little still stops before another can take over. At most half the TTL:
 * only test TTLs are that short, and they must leave a window.
 */
export function leaseTrustMarginMs(ttlMs: number): number {
  return Math.min(Math.max(1000, ttlMs / 10), ttlMs / 2);
}

/** Backoff after the n-th consecutive Transient error: min(interval, 5 s x 2^(n-1)). */
export function transientBackoffMs(n: number, intervalMs: number): number {
  return Math.min(intervalMs, 5000 * 2 ** Math.min(Math.max(n, 1) - 1, 30));
}

/** Breaker open time for the k-th opening in a row (1-based): 60 s doubling, capped at 30 min. */
export function breakerBackoffMs(k: number): number {
  return Math.min(30 * 60_000, 60_000 * 2 ** Math.min(Math.max(k, 1) - 1, 20));
}
