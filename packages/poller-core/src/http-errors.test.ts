import { describe, expect, it } from 'vitest';
import { clampRetryAfter } from '@agent/guarded-http';
import { asPollerError, statusFailure, urlProblems } from './http-errors.js';
import { safeUrl } from './index.js';

describe('HTTP helpers for kinds', () => {
  it.each([
    ['https://feeds.example/x', false, []],
    ['ftp://feeds.example/x', false, ['f must use http or https, not ftp']],
    ['not a url', false, ['f is not a valid URL; write it as https://host/path']],
  ])('urlProblems(%s)', (raw, allow, problems) => {
    expect(urlProblems('f', raw, allow)).toEqual(problems);
  });

  it('refuses literal private hosts unless allowed, and never-allowed ranges always', () => {
    expect(urlProblems('url', 'http://127.0.0.1/x', false)[0]).toMatch(
      /private or loopback.*allow_private_networks: true/,
    );
    expect(urlProblems('url', 'http://localhost/x', false)[0]).toMatch(/private or loopback/);
    expect(urlProblems('url', 'http://10.1.2.3/x', true)).toEqual([]);
    expect(urlProblems('url', 'http://169.254.169.254/latest', true)[0]).toMatch(/never allowed/);
    expect(urlProblems('url', 'https://user:pw@host.example/', false)[0]).toMatch(/user:password@/);
  });

  it('maps failures and statuses to error classes by code', () => {
    expect(
      asPollerError(Object.assign(new Error('blocked'), { code: 'HTTP_SSRF_BLOCKED' }), 'fetch').name,
    ).toBe('PermanentError');
    // A body the server wants sent to another origin: only the job's URL can change that.
    expect(
      asPollerError(Object.assign(new Error('cross-origin'), { code: 'HTTP_REDIRECT_REFUSED' }), 'fetch')
        .name,
    ).toBe('PermanentError');
    expect(asPollerError(Object.assign(new Error('reset'), { code: 'HTTP_NETWORK' }), 'fetch').name).toBe(
      'TransientError',
    );
    // A client message that names the request already is not prefixed with it again.
    const what = 'GET https://feeds.example/x.json';
    expect(
      asPollerError(
        Object.assign(new Error(`${what} failed: network error (ECONNREFUSED); check the host`), {
          code: 'HTTP_NETWORK',
        }),
        what,
      ).message,
    ).toBe(`${what} failed: network error (ECONNREFUSED); check the host [HTTP_NETWORK]`);
    expect(
      asPollerError(Object.assign(new Error('too big'), { code: 'HTTP_BODY_TOO_LARGE' }), what).message,
    ).toBe(`${what}: too big [HTTP_BODY_TOO_LARGE]`);
    const e = statusFailure(
      { status: 503, retryAfterMs: 10 },
      { what: 'fetch', permanent: (s) => s < 500, hint: 'fix it' },
    ) as Error & { retryAfterMs?: number };
    expect(e.name).toBe('TransientError');
    expect(e.retryAfterMs).toBe(1000);
    expect(
      statusFailure({ status: 404 }, { what: 'fetch', permanent: (s) => s < 500, hint: 'fix it' }).message,
    ).toBe('fetch: the server answered 404; fix it');
    expect(clampRetryAfter(10 * 3600_000)).toBe(3600_000);
    expect(safeUrl('https://u:p@h.example/a?token=x#f')).toBe('https://h.example/a');
  });
});
