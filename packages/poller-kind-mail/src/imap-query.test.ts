import { describe, expect, it } from 'vitest';
import { translateQuery, windowSince } from './imap-query.js';

const NOW = new Date('2026-03-10T12:00:00Z');
const DAY = 86_400_000;

describe('translateQuery', () => {
  const ok: [string, unknown][] = [
    ['', {}],
    ['from:shop.example', { from: 'shop.example' }],
    ['from:a@x.com subject:order', { from: 'a@x.com', subject: 'order' }],
    ['subject:"order shipped"', { subject: 'order shipped' }],
    ['"exact phrase"', { text: 'exact phrase' }],
    ['invoice', { text: 'invoice' }],
    ['is:unread', { seen: false }],
    ['is:read', { seen: true }],
    ['IS:Starred', { flagged: true }],
    ['to:me@x.com cc:boss@x.com bcc:b@x.com', { to: 'me@x.com', cc: 'boss@x.com', bcc: 'b@x.com' }],
    ['newer_than:2d', { since: new Date(NOW.getTime() - 2 * DAY) }],
    ['older_than:1m', { before: new Date('2026-02-10T12:00:00Z') }],
    ['newer_than:1y', { since: new Date('2025-03-10T12:00:00Z') }],
    ['after:2026/03/01 before:2026-03-05', { since: new Date('2026-03-01'), before: new Date('2026-03-05') }],
    ['after:1772323200', { since: new Date(1772323200 * 1000) }],
    ['from:a OR from:b', { or: [{ from: 'a' }, { from: 'b' }] }],
    ['from:a OR from:b OR subject:c', { or: [{ from: 'a' }, { from: 'b' }, { subject: 'c' }] }],
    ['-from:spam.example', { not: { from: 'spam.example' } }],
    ['-"do not reply"', { not: { text: 'do not reply' } }],
    ['is:unread (from:a OR from:b)', { seen: false, or: [{ from: 'a' }, { from: 'b' }] }],
    ['-(from:a OR from:b)', { not: { or: [{ from: 'a' }, { from: 'b' }] } }],
    ['from:a from:b', { or: [{ from: 'a' }], not: { not: { from: 'b' } } }],
    ['order AND is:unread', { text: 'order', seen: false }],
    [
      '(from:a subject:x) OR (from:b subject:y)',
      {
        or: [
          { from: 'a', subject: 'x' },
          { from: 'b', subject: 'y' },
        ],
      },
    ],
  ];
  it.each(ok)('%j', (query, search) => {
    expect(translateQuery(query, NOW)).toEqual({ ok: true, search });
  });

  const refused: [string, RegExp][] = [
    ['label:work', /"label:work" at character 1: this operator has no IMAP equivalent/],
    ['from:a has:attachment', /"has:attachment" at character 8/],
    ['is:important', /no equivalent of this is: value/],
    ['in:inbox', /"in:inbox"/],
    ['category:promotions', /no IMAP equivalent/],
    ['newer_than:2w', /expected a count and a unit d, m or y/],
    ['after:yesterday', /expected a date/],
    ['subject:', /has no value/],
    ['"open quote', /unbalanced quote at character 1/],
    ['(from:a', /"\(" at character 1 is never closed/],
    ['from:a)', /"\)" at character 7 closes nothing/],
    ['OR from:a', /"OR" at character 1 has nothing before it/],
    ['from:a OR', /ends where a term is expected/],
    ['{from:a from:b}', /groups are not supported/],
  ];
  it.each(refused)('refuses %j and says where', (query, problem) => {
    const r = translateQuery(query, NOW);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problem).toMatch(problem);
    }
  });
});

describe('windowSince', () => {
  it('searches from the day before the window and cuts exactly client-side', () => {
    const w = windowSince(NOW, '2d');
    expect(w.cutoffMs).toBe(NOW.getTime() - 2 * DAY);
    expect(w.since.getTime()).toBe(NOW.getTime() - 3 * DAY);
  });
});
