/**
 * Cron schedules: cron-parser parses the expression and picks matching calendar days (in UTC, where it has no
 * DST to get wrong); the wall-clock to instant step, and so the DST policy described in schedule.ts, is ours.
 */
import { createRequire } from 'node:module';
import type { ParseResult, Schedule } from './schedule.js';
import { isValidTimeZone, zoneOffsetMs } from './time-zone.js';

type Parser = typeof import('cron-parser').CronExpressionParser;
let parser: Parser | undefined;

// Loaded at the first cron expression: cron-parser brings luxon (half a megabyte of source the heap keeps),
// which a daemon without cron jobs never needs. Synchronous (it is CommonJS), so parsing stays synchronous.
function cronParser(): Parser {
  parser ??= (createRequire(import.meta.url)('cron-parser') as typeof import('cron-parser'))
    .CronExpressionParser;
  return parser;
}

const CRON_FIELDS =
  'six fields: second 0-59, minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-7 (0 and 7 are Sunday), e.g. "0 */5 * * * *"';

const DAY = 86_400_000;
const HORIZON_DAYS = 366 * 10;

function nums(vals: readonly unknown[]): number[] {
  return [...new Set(vals.filter((v): v is number => typeof v === 'number'))].sort((a, b) => a - b);
}

interface CronParts {
  seconds: number[];
  minutes: number[];
  hours: number[];
  hourWildcard: boolean;
  dayExpr: string;
  /** Day of month, month and day of week are all `*`: every day matches, no day parser needed. */
  everyDay: boolean;
}

export function parseCron(expr: string, tz: string, jitter: number | undefined): ParseResult {
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
    const parsed = cronParser().parse(text, { tz: 'UTC' });
    const f = parsed.fields;
    parts = {
      seconds: nums(f.second.values),
      minutes: nums(f.minute.values),
      hours: nums(f.hour.values),
      hourWildcard: fields[2] === '*',
      dayExpr: `0 0 0 ${fields[3]} ${fields[4]} ${fields[5]}`,
      everyDay: fields[3] === '*' && fields[4] === '*' && (fields[5] === '*' || fields[5] === '?'),
    };
    cronParser().parse(parts.dayExpr, { tz: 'UTC' });
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
    days = cronParser().parse(parts.dayExpr, { tz: 'UTC', currentDate: new Date(firstDay - 1000) });
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
