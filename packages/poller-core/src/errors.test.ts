import { GuardedHttpError } from '@agent/guarded-http';
import { describe, expect, it } from 'vitest';
import { classifyError, PermanentError, TransientError } from './errors.js';

describe('classifyError', () => {
  it('is permanent for a PermanentError and for a refused request, transient for the rest', () => {
    expect(classifyError(new PermanentError('gone'))).toBe('permanent');
    expect(classifyError(new TransientError('later'))).toBe('transient');
    for (const code of [
      'HTTP_SSRF_BLOCKED',
      'HTTP_BAD_URL',
      'HTTP_BAD_SCHEME',
      'HTTP_INVALID_REQUEST',
      'HTTP_REDIRECT_REFUSED',
    ] as const)
      expect(classifyError(new GuardedHttpError(code, 'refused')), code).toBe('permanent');
    for (const code of [
      'HTTP_NETWORK',
      'HTTP_TIMEOUT',
      'HTTP_BODY_TOO_LARGE',
      'HTTP_TOO_MANY_REDIRECTS',
      'HTTP_INVALID_JSON',
      'HTTP_ABORTED',
      'HTTP_CLOSED',
    ] as const)
      expect(classifyError(new GuardedHttpError(code, 'failed')), code).toBe('transient');
    expect(classifyError(new Error('boom'))).toBe('transient');
    expect(classifyError(undefined)).toBe('transient');
  });

  it('goes by code: an HTTP error of another package copy counts, a message alone does not', () => {
    expect(classifyError({ code: 'HTTP_SSRF_BLOCKED', refused: true, message: 'x' })).toBe('permanent');
    expect(classifyError(new Error('HTTP_SSRF_BLOCKED: refused'))).toBe('transient');
  });
});
