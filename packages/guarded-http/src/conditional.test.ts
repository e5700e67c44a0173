import { describe, expect, it } from 'vitest';
import { conditionalHeaders, validatorsFrom } from './conditional.js';

describe('conditionalHeaders', () => {
  it('sends both validators verbatim', () => {
    expect(conditionalHeaders({ etag: 'W/"abc-1"', lastModified: 'Tue, 03 Mar 2026 10:00:00 GMT' })).toEqual({
      'if-none-match': 'W/"abc-1"',
      'if-modified-since': 'Tue, 03 Mar 2026 10:00:00 GMT',
    });
  });

  it('leaves out absent, empty and unsafe validators', () => {
    expect(conditionalHeaders({ etag: '"x"' })).toEqual({ 'if-none-match': '"x"' });
    expect(conditionalHeaders({ lastModified: 'Tue, 03 Mar 2026 10:00:00 GMT', etag: '' })).toEqual({
      'if-modified-since': 'Tue, 03 Mar 2026 10:00:00 GMT',
    });
    expect(conditionalHeaders({ etag: '"a"\r\nX-Injected: 1' })).toEqual({});
    expect(conditionalHeaders({ etag: 'x'.repeat(2000) })).toEqual({});
    expect(conditionalHeaders(undefined)).toEqual({});
    expect(conditionalHeaders(null)).toEqual({});
  });
});

describe('validatorsFrom', () => {
  it('reads a plain header record (any case) and a Headers object', () => {
    expect(validatorsFrom({ ETag: '"v2"', 'Last-Modified': 'Wed, 04 Mar 2026 10:00:00 GMT' })).toEqual({
      etag: '"v2"',
      lastModified: 'Wed, 04 Mar 2026 10:00:00 GMT',
    });
    const h = new Headers({ etag: 'W/"w"' });
    expect(validatorsFrom(h)).toEqual({ etag: 'W/"w"' });
  });

  it('keeps a previous validator the response did not repeat (304)', () => {
    const previous = { etag: '"old"', lastModified: 'Mon, 02 Mar 2026 10:00:00 GMT' };
    expect(validatorsFrom({ etag: '"new"' }, previous)).toEqual({
      etag: '"new"',
      lastModified: 'Mon, 02 Mar 2026 10:00:00 GMT',
    });
    expect(validatorsFrom({}, previous)).toEqual(previous);
  });

  it('takes the first of repeated values', () => {
    expect(validatorsFrom({ etag: ['"a"', '"b"'] })).toEqual({ etag: '"a"' });
  });
});
