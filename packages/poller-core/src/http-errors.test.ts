import { describe, expect, it } from 'vitest';
import { GuardedHttpError } from '@agent/guarded-http';
import { asPollerError, statusFailure } from './http-errors.js';

describe('HTTP helpers for kinds', () => {
  it('maps failures and statuses to error classes by code', () => {
    expect(asPollerError(new GuardedHttpError('HTTP_SSRF_BLOCKED', 'blocked'), 'fetch').name).toBe(
      'PermanentError',
    );
    // A body the server wants sent to another origin: only the job's URL can change that.
    expect(asPollerError(new GuardedHttpError('HTTP_REDIRECT_REFUSED', 'cross-origin'), 'fetch').name).toBe(
      'PermanentError',
    );
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
    // The server's wait clamped to [1 s, 1 h], as the runner would.
    expect(e.retryAfterMs).toBe(1000);
    expect(
      statusFailure({ status: 404 }, { what: 'fetch', permanent: (s) => s < 500, hint: 'fix it' }).message,
    ).toBe('fetch: the server answered 404; fix it');
  });
});
