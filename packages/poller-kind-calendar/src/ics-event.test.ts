import { describe, expect, it } from 'vitest';
import { parseEvents } from './ical.js';
import { icsEvent } from './ics-event.js';

describe('icsEvent', () => {
  it('writes an event the parser reads back: escaped summary, DTSTART parameters, more lines', () => {
    const ics = icsEvent({
      uid: 'e1',
      summary: 'Plan; review, \\ and\nmore',
      start: 'TZID=Europe/Madrid:20260305T100000',
      end: '20260305T110000Z',
      lines: ['STATUS:CANCELLED'],
    });
    expect(ics.endsWith('END:VCALENDAR\r\n')).toBe(true);
    expect(parseEvents(ics)).toEqual([
      {
        uid: 'e1',
        summary: 'Plan; review, \\ and\nmore',
        location: '',
        status: 'cancelled',
        start: { value: '2026-03-05T10:00:00', allDay: false, tzid: 'Europe/Madrid' },
        end: { value: '2026-03-05T11:00:00Z', allDay: false },
        lastModified: '2026-03-01T09:00:00Z',
      },
    ]);
  });
});
