/** IMAP failures as poller errors. Pure: decided by the error's codes and flags, never by its text. */
import { PermanentError, TransientError } from '@agent/poller-core';

interface ImapErrorShape {
  code?: unknown;
  authenticationFailed?: unknown;
  serverResponseCode?: unknown;
  mailboxMissing?: unknown;
  tlsFailed?: unknown;
  throttleReset?: unknown;
}

/** Server response codes (RFC 5530) that say "later", also on a failed login. */
const TRANSIENT_RESPONSE_CODES = new Set(['UNAVAILABLE', 'INUSE', 'LIMIT', 'SERVERBUG', 'OVERQUOTA']);

/**
 * Authentication failure, a missing mailbox and a failed TLS handshake are Permanent (the account needs
 * fixing); network errors, timeouts, BYE, throttling and RFC 5530 "try later" codes are Transient.
 */
export function imapErrorClass(err: unknown): { errorClass: 'transient' | 'permanent'; why: string } {
  const e = (err ?? {}) as ImapErrorShape;
  const code = typeof e.code === 'string' ? e.code : undefined;
  const response = typeof e.serverResponseCode === 'string' ? e.serverResponseCode.toUpperCase() : undefined;
  if (response && TRANSIENT_RESPONSE_CODES.has(response))
    return { errorClass: 'transient', why: `server answered [${response}]` };
  if (e.authenticationFailed === true)
    return {
      errorClass: 'permanent',
      why: `authentication failed${response ? ` [${response}]` : ''}; check user and password (or access_token)`,
    };
  if (e.mailboxMissing === true || response === 'NONEXISTENT')
    return { errorClass: 'permanent', why: 'the mailbox does not exist; check mailbox' };
  if (e.tlsFailed === true || code === 'STARTTLS_INJECTION')
    return { errorClass: 'permanent', why: 'the TLS handshake failed; check tls and port' };
  if (code === 'ETHROTTLE') return { errorClass: 'transient', why: 'the server throttles requests' };
  return { errorClass: 'transient', why: `${code ?? 'connection error'}` };
}

/** A thrown IMAP error as Transient/Permanent with a message naming the account and the step. */
export function imapPollerError(err: unknown, account: string, step: string): Error {
  if (err instanceof PermanentError || err instanceof TransientError) return err;
  const { errorClass, why } = imapErrorClass(err);
  const Cls = errorClass === 'permanent' ? PermanentError : TransientError;
  const throttle = (err as ImapErrorShape | null)?.throttleReset;
  return new Cls(`mail account "${account}" (imap): ${step} failed: ${why}`, {
    cause: err,
    ...(typeof throttle === 'number' && throttle > 0 ? { retryAfterMs: throttle } : {}),
  });
}
