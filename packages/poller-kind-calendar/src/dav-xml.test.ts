import { describe, expect, it } from 'vitest';
import { isInvalidSyncToken, parseMultistatus } from './dav-xml.js';

describe('parseMultistatus', () => {
  it('reads a Radicale-style sync answer: changed, deleted, token', () => {
    const xml = `<?xml version='1.0' encoding='utf-8'?>
<multistatus xmlns="DAV:"><response><href>/test/cal/ev1.ics</href><propstat><prop><getetag>"abc"</getetag></prop><status>HTTP/1.1 200 OK</status></propstat></response><response><href>/test/cal/ev2.ics</href><status>HTTP/1.1 404 Not Found</status></response><sync-token>http://radicale.org/ns/sync/123</sync-token></multistatus>`;
    expect(parseMultistatus(xml)).toEqual({
      responses: [
        { href: '/test/cal/ev1.ics', status: 200, etag: '"abc"' },
        { href: '/test/cal/ev2.ics', status: 404 },
      ],
      syncToken: 'http://radicale.org/ns/sync/123',
    });
  });

  it('reads prefixed namespaces, escaped calendar data, CDATA and a 507 truncation marker', () => {
    const xml = `<d:multistatus xmlns:d="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav">
<d:response><d:href>/c/a%20b.ics</d:href><d:propstat><d:prop><d:getetag>&quot;1&quot;</d:getetag>
<cal:calendar-data>BEGIN:VCALENDAR&#13;
SUMMARY:A &amp; B&#13;
END:VCALENDAR</cal:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
<d:response><d:href>/c/x.ics</d:href><d:propstat><d:prop><cal:calendar-data><![CDATA[BEGIN:VCALENDAR
END:VCALENDAR]]></cal:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
<d:response><d:href>/c/</d:href><d:status>HTTP/1.1 507 Insufficient Storage</d:status></d:response>
<d:sync-token>t2</d:sync-token></d:multistatus>`;
    const r = parseMultistatus(xml);
    expect(r.syncToken).toBe('t2');
    expect(r.responses[0]).toEqual({
      href: '/c/a%20b.ics',
      status: 200,
      etag: '"1"',
      calendarData: 'BEGIN:VCALENDAR\r\nSUMMARY:A & B\r\nEND:VCALENDAR',
    });
    expect(r.responses[1]!.calendarData).toBe('BEGIN:VCALENDAR\nEND:VCALENDAR');
    expect(r.responses[2]).toEqual({ href: '/c/', status: 507 });
  });

  it('an empty multistatus has no responses', () => {
    expect(parseMultistatus('<multistatus xmlns="DAV:"><sync-token>t</sync-token></multistatus>')).toEqual({
      responses: [],
      syncToken: 't',
    });
  });
});

describe('isInvalidSyncToken', () => {
  it.each([
    ['<error xmlns="DAV:"><valid-sync-token /></error>', true],
    ['<D:error xmlns:D="DAV:"><D:valid-sync-token/></D:error>', true],
    ['<error xmlns="DAV:"><need-privileges/></error>', false],
    ['', false],
  ])('%s', (xml, expected) => expect(isInvalidSyncToken(xml)).toBe(expected));
});
