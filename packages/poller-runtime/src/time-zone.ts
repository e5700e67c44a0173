/** Time-zone offsets for cron schedules, cached: a tick asks for the same day boundaries again and again. */
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
