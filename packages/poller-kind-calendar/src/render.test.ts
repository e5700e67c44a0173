import { describe, expect, it } from 'vitest';
import { changeOf, eventFields, formatEventTime, itemIdOf } from './render.js';

describe('calendar rendering', () => {
  it('renders all-day and timed starts in the event zone, across a DST change', () => {
    expect(formatEventTime({ date: '2026-03-05' })).toBe('2026-03-05 (all day)');
    expect(formatEventTime({ dateTime: '2026-03-05T10:00:00+01:00', timeZone: 'Europe/Madrid' })).toBe(
      '2026-03-05 10:00 Europe/Madrid',
    );
    // 29 March 2026: Madrid moves to +02:00; the wall time stays right.
    expect(formatEventTime({ dateTime: '2026-03-30T08:00:00Z', timeZone: 'Europe/Madrid' })).toBe(
      '2026-03-30 10:00 Europe/Madrid',
    );
    expect(formatEventTime({ dateTime: '2026-03-05T10:00:00-05:00' })).toBe('2026-03-05 10:00 -05:00');
    expect(formatEventTime({ dateTime: '2026-03-05T10:00:00Z', timeZone: 'Not/AZone' })).toBe(
      '2026-03-05 10:00 UTC',
    );
    expect(formatEventTime(undefined)).toBe('');
    expect(formatEventTime({ dateTime: 'garbage' })).toBe('garbage');
  });

  it('renders a minimal cancelled payload without crashing', () => {
    const e = { id: 'ev1', status: 'cancelled', etag: '"3"' };
    expect(eventFields(e)).toEqual({
      summary: '',
      start: '',
      end: '',
      html_link: '',
      status: 'cancelled',
      id: 'ev1',
      location: '',
      updated: '',
      change: 'cancelled',
      next: '',
    });
    expect(itemIdOf(e)).toBe('ev1@"3"');
    const instance = { ...e, recurringEventId: 'ser', originalStartTime: { date: '2026-03-09' } };
    expect(eventFields(instance).start).toBe('2026-03-09 (all day)');
  });

  it('ids change with every update; created vs updated from the timestamps', () => {
    const a = { id: 'x', created: '2026-03-01T10:00:00.000Z', updated: '2026-03-01T10:00:00.500Z' };
    const b = { ...a, updated: '2026-03-02T09:00:00.000Z' };
    expect(itemIdOf(a)).not.toBe(itemIdOf(b));
    expect(changeOf(a)).toBe('created');
    expect(changeOf(b)).toBe('updated');
    expect(eventFields({ id: 'y' }).summary).toBe('(no title)');
  });
});
