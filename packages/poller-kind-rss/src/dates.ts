// Feed dates: RFC 822/1123 (RSS `pubDate`) and ISO 8601 / W3C-DTF (Atom, Dublin Core, JSON Feed).
// Parsing is done by hand so the result never depends on the machine's time zone: a date without a
// zone is read as UTC. Anything unparseable or out of range gives `undefined`, never an Invalid Date.

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

// RFC 822 §5.1 zone names, plus the few more that feeds actually use. Unknown names count as UTC.
const ZONES: Readonly<Record<string, number>> = {
  ut: 0,
  utc: 0,
  gmt: 0,
  z: 0,
  est: -5 * 60,
  edt: -4 * 60,
  cst: -6 * 60,
  cdt: -5 * 60,
  mst: -7 * 60,
  mdt: -6 * 60,
  pst: -8 * 60,
  pdt: -7 * 60,
  akst: -9 * 60,
  akdt: -8 * 60,
  hst: -10 * 60,
  bst: 60,
  cet: 60,
  cest: 2 * 60,
  eet: 2 * 60,
  eest: 3 * 60,
  jst: 9 * 60,
};

function zoneOffsetMinutes(zone: string | undefined): number | undefined {
  if (zone === undefined || zone === '') return 0;
  const numeric = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone);
  if (numeric) {
    const hours = Number(numeric[2]);
    const minutes = Number(numeric[3] ?? '0');
    if (hours > 23 || minutes > 59) return undefined;
    return (numeric[1] === '-' ? -1 : 1) * (hours * 60 + minutes);
  }
  return ZONES[zone.toLowerCase()] ?? 0;
}

function build(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millis: number,
  offsetMinutes: number,
): Date | undefined {
  if (year < 1000 || year > 9999 || month < 1 || month > 12 || day < 1 || day > 31) return undefined;
  if (hour > 24 || minute > 59 || second > 60) return undefined;
  const time = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), millis);
  // Reject days that roll over into the next month (Feb 30th).
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return undefined;
  const date = new Date(time - offsetMinutes * 60_000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

const ISO_RE =
  /^(\d{4})(?:-?(\d{2})(?:-?(\d{2})(?:[Tt ]+(\d{2}):?(\d{2})(?::?(\d{2})(?:[.,](\d{1,9}))?)?)?)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?|UTC|GMT)?$/;

function parseIso(text: string): Date | undefined {
  const match = ISO_RE.exec(text);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = match;
  const offset = zoneOffsetMinutes(zone);
  if (offset === undefined) return undefined;
  const millis = frac ? Math.floor(Number(`0.${frac}`) * 1000) : 0;
  return build(
    Number(y),
    Number(mo ?? '1'),
    Number(d ?? '1'),
    Number(h ?? '0'),
    Number(mi ?? '0'),
    Number(s ?? '0'),
    millis,
    offset,
  );
}

// "Mon, 06 Sep 2010 00:01:00 +0000", "6 Sep 10 00:01 GMT", "Sept 6 2010" is not accepted.
const RFC822_RE =
  /^(?:[A-Za-z]{2,9},?\s*)?(\d{1,2})[\s-]+([A-Za-z]{3,9})\.?[\s-]+(\d{2}|\d{4})(?:[\sT]+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d{1,6})?)?\s*(?:([+-]\d{2}:?\d{2}|[A-Za-z]{1,5})\s*(?:\([^)]{0,40}\))?)?$/;

function parseRfc822(text: string): Date | undefined {
  const match = RFC822_RE.exec(text);
  if (!match) return undefined;
  const [, d, monthName, y, h, mi, s, zone] = match;
  const month = MONTHS.indexOf((monthName ?? '').slice(0, 3).toLowerCase()) + 1;
  if (month === 0) return undefined;
  let year = Number(y);
  if ((y ?? '').length === 2) year += year < 50 ? 2000 : 1900;
  const offset = zoneOffsetMinutes(zone);
  if (offset === undefined) return undefined;
  return build(year, month, Number(d), Number(h ?? '0'), Number(mi ?? '0'), Number(s ?? '0'), 0, offset);
}

/**
 * Parses a feed date. Accepts ISO 8601 / RFC 3339 / W3C-DTF (`2020-01-02`, `2020-01-02T03:04:05.6+01:00`)
 * and RFC 822 / RFC 1123 (`Mon, 06 Sep 2010 00:01:00 +0000`, 2-digit years, US zone names). A missing
 * zone means UTC. Returns `undefined` for anything else (never an Invalid Date).
 */
export function parseFeedDate(value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (text.length === 0 || text.length > 100) return undefined;
  return parseIso(text) ?? parseRfc822(text);
}
