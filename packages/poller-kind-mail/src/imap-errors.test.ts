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
    ['TLS failure', { tlsFailed: true }, 'permanent'],
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

  it('names the account and the step, and keeps the throttle delay', () => {
    const e = imapPollerError({ code: 'ETHROTTLE', throttleReset: 5000 }, 'work', 'search');
    expect(e.message).toBe('mail account "work" (imap): search failed: the server throttles requests');
    expect((e as { retryAfterMs?: number }).retryAfterMs).toBe(5000);
  });
});
