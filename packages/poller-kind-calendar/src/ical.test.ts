import { describe, expect, it } from 'vitest';
import { formatIcalTime, nextInstance, parseEvents } from './ical.js';

const cal = (...lines: string[]) =>
  ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN', ...lines, 'END:VCALENDAR', ''].join('\r\n');

describe('parseEvents', () => {
  it('reads a timed event with a TZID, folded lines and escaped text', () => {
    const [e] = parseEvents(
      cal(
        'BEGIN:VEVENT',
        'UID:ev1@test',
        'DTSTAMP:20260301T090000Z',
        'DTSTART;TZID=Europe/Madrid:20260305T100000',
        'DTEND;TZID=Europe/Madrid:20260305T110000',
        'SUMMARY:Planning\\, with a very long title that the server folds onto',
        '  the next line',
        'LOCATION:Room 4\\; floor 2',
        'BEGIN:VALARM',
        'ACTION:DISPLAY',
        'SUMMARY:alarm text is not the summary',
        'END:VALARM',
        'END:VEVENT',
      ),
    );
    expect(e).toEqual({
      uid: 'ev1@test',
      summary: 'Planning, with a very long title that the server folds onto the next line',
      location: 'Room 4; floor 2',
      status: 'confirmed',
      start: { value: '2026-03-05T10:00:00', allDay: false, tzid: 'Europe/Madrid' },
      end: { value: '2026-03-05T11:00:00', allDay: false, tzid: 'Europe/Madrid' },
      lastModified: '2026-03-01T09:00:00Z',
    });
  });

  const times: [string, string][] = [
    ['DTSTART;VALUE=DATE:20260305', '2026-03-05 (all day)'],
    ['DTSTART:20260305T100000Z', '2026-03-05 10:00 UTC'],
    ['DTSTART:20260305T100000', '2026-03-05 10:00'],
    ['DTSTART;TZID="America/New_York":20260308T023000', '2026-03-08 02:30 America/New_York'],
  ];
  it.each(times)('%s renders as %s', (line, shown) => {
    const [e] = parseEvents(cal('BEGIN:VEVENT', 'UID:x', line, 'END:VEVENT'));
    expect(formatIcalTime(e!.start)).toBe(shown);
  });

  it('reads STATUS, RRULE, RECURRENCE-ID and several events; ignores garbage lines', () => {
    const evs = parseEvents(
      cal(
        'BEGIN:VEVENT',
        'UID:a',
        'STATUS:CANCELLED',
        'garbage without colon',
        'END:VEVENT',
        'BEGIN:VEVENT',
        'UID:b',
        'RRULE:FREQ=WEEKLY;COUNT=3',
        'RECURRENCE-ID:20260305T100000Z',
        'END:VEVENT',
      ),
    );
    expect(evs.map((e) => [e.uid, e.status, e.rrule, e.recurrenceId])).toEqual([
      ['a', 'cancelled', undefined, undefined],
      ['b', 'confirmed', 'FREQ=WEEKLY;COUNT=3', '20260305T100000Z'],
    ]);
  });
});

const ev = (start: string, rrule: string, tzid?: string) =>
  ({
    uid: 'r',
    summary: '',
    location: '',
    status: 'confirmed',
    rrule,
    start: { value: start, allDay: start.length === 10, ...(tzid ? { tzid } : {}) },
  }) as const;

describe('nextInstance', () => {
  const after = new Date('2026-03-10T12:00:00Z');
  const table: [string, ReturnType<typeof ev>, string | undefined][] = [
    [
      'weekly keeps the wall time',
      ev('2026-03-02T10:00:00', 'FREQ=WEEKLY', 'Europe/Madrid'),
      '2026-03-16 10:00 Europe/Madrid',
    ],
    ['daily, interval 2', ev('2026-03-01T08:00:00Z', 'FREQ=DAILY;INTERVAL=2'), '2026-03-11 08:00 UTC'],
    ['monthly all-day', ev('2026-01-15', 'FREQ=MONTHLY'), '2026-03-15 (all day)'],
    ['yearly', ev('2020-02-01T09:00:00', 'FREQ=YEARLY'), '2027-02-01 09:00'],
    ['count exhausted', ev('2026-03-01T08:00:00Z', 'FREQ=DAILY;COUNT=3'), undefined],
    ['until passed', ev('2026-03-01T08:00:00Z', 'FREQ=DAILY;UNTIL=20260305T000000Z'), undefined],
    ['BYDAY is not guessed', ev('2026-03-02T10:00:00Z', 'FREQ=WEEKLY;BYDAY=MO,WE'), undefined],
    ['unknown FREQ', ev('2026-03-02T10:00:00Z', 'FREQ=HOURLY'), undefined],
  ];
  it.each(table)('%s', (_name, e, shown) => {
    const n = nextInstance(e, after);
    expect(n === undefined ? undefined : formatIcalTime(n)).toBe(shown);
  });
});
