import { describe, expect, it } from 'vitest';
import { imapAccountProblem } from './imap-session.js';

describe('imapAccountProblem', () => {
  it.each([
    'localhost',
    'LOCALHOST',
    '127.0.0.1',
    '127.255.255.254',
    '[::1]',
    '::1',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
  ])('tls: none with the loopback host %s is allowed (as the connect check classifies it)', (host) => {
    expect(imapAccountProblem({ tls: 'none', host })).toBeUndefined();
  });

  it.each(['imap.example.com', '192.0.2.7', '128.0.0.1', '127.0.0.256', 'a.localhost'])(
    'tls: none with %s is refused, naming the host',
    (host) => {
      expect(imapAccountProblem({ tls: 'none', host })).toBe(
        `tls: none sends the password in plain text and is only allowed for a loopback host (localhost, 127.0.0.1, ::1), not "${host}"`,
      );
    },
  );

  it('says nothing about a TLS mode', () => {
    expect(imapAccountProblem({ tls: 'implicit', host: 'imap.example.com' })).toBeUndefined();
    expect(imapAccountProblem({ tls: 'starttls', host: '192.0.2.7' })).toBeUndefined();
  });
});
