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
 * Certificate verification failures as Node reports them (OpenSSL's verify results and the host name
 * check): the server's certificate is not trusted for this host, which no retry changes.
 */
const CERTIFICATE_CODE =
  /^(?:DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_(?:VERIFY_LEAF_SIGNATURE|GET_ISSUER_CERT(?:_LOCALLY)?|DECRYPT_CERT_SIGNATURE)|CERT_(?:SIGNATURE_FAILURE|NOT_YET_VALID|HAS_EXPIRED|REVOKED|UNTRUSTED|REJECTED)|INVALID_CA|INVALID_PURPOSE|HOSTNAME_MISMATCH|ERR_TLS_CERT_ALTNAME_INVALID)$/;

/**
 * Authentication failure, a missing mailbox, a certificate that does not verify, a failed TLS handshake
 * and a server without STARTTLS under `tls: starttls` are Permanent (the account needs fixing); network
 * errors, timeouts, BYE, throttling and RFC 5530 "try later" codes are Transient.
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
  if (code !== undefined && CERTIFICATE_CODE.test(code))
    return {
      errorClass: 'permanent',
      why: `the server certificate was not accepted (${code}); check host, or trust its CA with tls_ca_file`,
    };
  // OpenSSL's handshake failures (`ERR_SSL_WRONG_VERSION_NUMBER`: the port does not speak TLS, ...).
  if (code?.startsWith('ERR_SSL_'))
    return {
      errorClass: 'permanent',
      why: `the TLS handshake failed (${code}); check tls and port (993 for implicit, 143 for starttls)`,
    };
  if (code === 'STARTTLS_INJECTION')
    return {
      errorClass: 'permanent',
      why: 'the server sent data between STARTTLS and the TLS handshake (STARTTLS_INJECTION); check the network path',
    };
  // imapflow marks a STARTTLS the server does not offer (or refuses) with `tlsFailed` and no code.
  if (e.tlsFailed === true && code === undefined)
    return {
      errorClass: 'permanent',
      why: 'the server does not offer STARTTLS, which tls: starttls requires; use tls: implicit (port 993) for a server that speaks TLS from the first byte',
    };
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
