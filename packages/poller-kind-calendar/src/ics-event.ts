/** An iCalendar object of one event, as a CalDAV client PUTs it: for tests against a real server. */

/** The event `icsEvent` writes. */
export interface IcsEventSpec {
  uid: string;
  /** SUMMARY, as plain text (escaped here). */
  summary?: string;
  /**
   * DTSTART: a value (`20260305T100000Z`), or parameters and value (`TZID=Europe/Madrid:20260305T100000`,
   * `VALUE=DATE:20260320`).
   */
  start?: string;
  /** DTEND, written as `start` is. */
  end?: string;
  /** DTSTAMP; default `20260301T090000Z`. */
  stamp?: string;
  /** More content lines of the VEVENT as they are (`RRULE:FREQ=WEEKLY`, `STATUS:CANCELLED`). */
  lines?: string[];
}

const text = (v: string) => v.replace(/[\\;,]/g, '\\$&').replace(/\r?\n/g, '\\n');

/** `NAME:value`, or `NAME;params:value` when the value starts with parameters. */
const dateProp = (name: string, v: string | undefined) =>
  v === undefined ? [] : [`${name}${v.includes(':') ? ';' : ':'}${v}`];

/** A VCALENDAR of one VEVENT with CRLF line ends, the body a `put` of `startRadicale` takes. */
export function icsEvent(e: IcsEventSpec): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//test//EN',
    'BEGIN:VEVENT',
    `UID:${e.uid}`,
    `DTSTAMP:${e.stamp ?? '20260301T090000Z'}`,
    ...(e.summary === undefined ? [] : [`SUMMARY:${text(e.summary)}`]),
    ...dateProp('DTSTART', e.start),
    ...dateProp('DTEND', e.end),
    ...(e.lines ?? []),
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
}
