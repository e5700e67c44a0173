import { describe, expect, it } from 'vitest';
import { imapErrorClass, imapPollerError } from './imap-errors.js';

describe('imapErrorClass', () => {
  const table: [string, unknown, 'transient' | 'permanent'][] = [
    [
      'wrong password',
      { authenticationFailed: true, serverResponseCode: 'AUTHENTICATIONFAILED' },
      'permanent',
    ],
    ['login refused without a code', { authenticationFailed: true }, 'permanent'],
    ['auth backend down', { authenticationFailed: true, serverResponseCode: 'UNAVAILABLE' }, 'transient'],
    ['missing mailbox', { mailboxMissing: true }, 'permanent'],
    ['NONEXISTENT', { serverResponseCode: 'NONEXISTENT' }, 'permanent'],
    ['no STARTTLS offered under tls: starttls', { tlsFailed: true }, 'permanent'],
    ['self-signed certificate', { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }, 'permanent'],
    ['unknown CA (implicit TLS)', { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }, 'permanent'],
    ['unknown CA (STARTTLS)', { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', tlsFailed: true }, 'permanent'],
    ['expired certificate', { code: 'CERT_HAS_EXPIRED' }, 'permanent'],
    ['issuer not in the trust store', { code: 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY' }, 'permanent'],
    ['certificate not yet valid', { code: 'CERT_NOT_YET_VALID' }, 'permanent'],
    ['host name mismatch', { code: 'ERR_TLS_CERT_ALTNAME_INVALID' }, 'permanent'],
    ['TLS to a plain-text port', { code: 'ERR_SSL_WRONG_VERSION_NUMBER' }, 'permanent'],
    ['STARTTLS injection', { code: 'STARTTLS_INJECTION', tlsFailed: true }, 'permanent'],
    ['reset during the STARTTLS handshake', { code: 'ECONNRESET', tlsFailed: true }, 'transient'],
    ['STARTTLS upgrade timeout', { code: 'UPGRADE_TIMEOUT', tlsFailed: true }, 'transient'],
    ['connection refused', { code: 'ECONNREFUSED' }, 'transient'],
    ['BYE / closed', { code: 'EConnectionClosed' }, 'transient'],
    ['no connection', { code: 'NoConnection' }, 'transient'],
    ['timeout', { code: 'ETIMEOUT' }, 'transient'],
    ['throttled', { code: 'ETHROTTLE', throttleReset: 5000 }, 'transient'],
    ['LIMIT', { serverResponseCode: 'LIMIT' }, 'transient'],
    ['anything else', new Error('x'), 'transient'],
  ];
  it.each(table)('%s', (_name, err, cls) => {
    expect(imapErrorClass(err).errorClass).toBe(cls);
  });

  it('says what to fix for a certificate and for a server without STARTTLS', () => {
    expect(imapErrorClass({ code: 'SELF_SIGNED_CERT_IN_CHAIN' }).why).toBe(
      'the server certificate was not accepted (SELF_SIGNED_CERT_IN_CHAIN); check host, or trust its CA with tls_ca_file',
    );
    expect(imapErrorClass({ tlsFailed: true }).why).toMatch(/^the server does not offer STARTTLS/);
  });

  it('names the account and the step, and keeps the throttle delay', () => {
    const e = imapPollerError({ code: 'ETHROTTLE', throttleReset: 5000 }, 'work', 'search');
    expect(e.message).toBe('mail account "work" (imap): search failed: the server throttles requests');
    expect((e as { retryAfterMs?: number }).retryAfterMs).toBe(5000);
  });
});
