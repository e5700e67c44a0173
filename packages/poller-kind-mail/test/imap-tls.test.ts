/**
 * The IMAP account's TLS modes and XOAUTH2 against a real Dovecot with a certificate of its own CA (made
 * in the scratch directory) and Dovecot's oauth2 passdb, inside the real poller service.
 */
import type { TestJobSpec } from '@agent/poller-runtime/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mailPollerKind } from '../src/index.js';
import { startDovecot, type DovecotServer } from '../src/testing.js';
import { mailJob } from './helpers.js';
import { startImapRelay } from './imap-relay.js';
import { plain } from './mime.js';
import { serviceHarness } from './service-harness.js';

const START = Date.parse('2026-03-01T12:00:00Z');
const HOUR = 3_600_000;

/** With a certificate, STARTTLS and IMAPS, and XOAUTH2. */
let secure: DovecotServer;
/** Plain text only: no STARTTLS in its capabilities. */
let plainOnly: DovecotServer;
beforeAll(async () => {
  [secure, plainOnly] = await Promise.all([startDovecot({ tls: true, oauth2: true }), startDovecot()]);
  // One message in each INBOX for every test to read.
  for (const s of [secure, plainOnly]) {
    const admin = await s.session();
    await admin.append('INBOX', plain({ subject: 'over tls' }, 'x'), [], new Date(START - HOUR));
    await admin.logout();
  }
});
afterAll(async () => {
  await secure?.stop();
  await plainOnly?.stop();
});

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

/** Reads without marking: every test finds the same message. */
const readOnlyJob = mailJob('m', { query: 'from:shop.example', mark_read_on_dispatch: false });

/** The account of `secure` over `tls`, on that mode's port, trusting `caFile` (default its own CA). */
const trusting = (tls: 'implicit' | 'starttls', caFile = secure.caFile) => ({
  tls,
  port: tls === 'implicit' ? secure.tlsPort : secure.port,
  password: secure.password,
  tls_ca_file: caFile,
});

async function setup(acct: Record<string, unknown>, jobs: TestJobSpec[] = [readOnlyJob]) {
  const h = serviceHarness(mailPollerKind, {
    jobs: jobs.map((j) => ({ ...j, failure_to: { channel: 'chat_b', to: 'ops' } })),
    start: new Date(START).toISOString(),
    agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
    accounts: {
      mail: {
        work: {
          provider: 'imap',
          host: '127.0.0.1',
          user: 'alice',
          allow_private_networks: true,
          ...acct,
        },
      },
    },
    secrets: [secure.password, secure.oauth2Token!],
  });
  cleanup.push(() => h.close());
  await h.service.start();
  await h.advance(0);
  return h;
}

describe('IMAP TLS modes and XOAUTH2 (Dovecot)', () => {
  it('tls: implicit verifies the certificate against tls_ca_file and reads the mailbox', async () => {
    const h = await setup(trusting('implicit'));
    expect(h.dispatcher.texts()).toEqual(['over tls from orders@shop.example']);
    expect((await h.service.show('m')).last_status).toBe('ok');
  });

  it('tls: starttls upgrades the plain port and verifies the certificate against tls_ca_file', async () => {
    const h = await setup(trusting('starttls'));
    expect(h.dispatcher.texts()).toEqual(['over tls from orders@shop.example']);
  });

  it('a certificate of an unknown CA is Permanent (paused, alert) and names the fix', async () => {
    for (const [tls, port] of [
      ['implicit', secure.tlsPort],
      ['starttls', secure.port],
    ] as const) {
      const h = await setup({ tls, port, password: secure.password });
      const st = await h.service.show('m');
      expect(st, tls).toMatchObject({ paused: true, last_status: 'permanent' });
      expect(st.last_error).toMatch(
        /connect failed: the server certificate was not accepted \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\); check host, or trust its CA with tls_ca_file/,
      );
      expect(h.dispatcher.texts('chat_b')).toHaveLength(1);
      expect(h.dispatcher.texts('chat_a')).toEqual([]);
    }
  });

  it('an unreadable tls_ca_file is Permanent and names the file', async () => {
    const h = await setup(trusting('implicit', `${secure.caFile}.missing`));
    const st = await h.service.show('m');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/tls_ca_file ".*ca\.pem\.missing" cannot be read \(ENOENT\)/);
  });

  it('tls: starttls against a server that offers no STARTTLS is Permanent: no password in plain text', async () => {
    const relay = await startImapRelay(plainOnly.port);
    cleanup.push(() => relay.close());
    const h = await setup({ tls: 'starttls', port: relay.port, password: plainOnly.password });
    const st = await h.service.show('m');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(
      /connect failed: the server does not offer STARTTLS, which tls: starttls requires; use tls: implicit/,
    );
    // The client gave up before it logged in.
    expect(relay.sent().some((l) => /LOGIN|AUTHENTICATE/i.test(l))).toBe(false);
    expect(relay.sent().join('\n')).not.toContain(plainOnly.password);
  });

  it('tls: implicit against a plain-text port is Permanent (the handshake fails)', async () => {
    const h = await setup({ tls: 'implicit', port: plainOnly.port, password: plainOnly.password });
    const st = await h.service.show('m');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(
      /the TLS handshake failed \(ERR_SSL_WRONG_VERSION_NUMBER\); check tls and port/,
    );
  });

  it('tls: none with a host that is not a loopback address is refused where the config is read', async () => {
    for (const host of ['imap.example.com', '192.0.2.7']) {
      const h = serviceHarness(mailPollerKind, {
        jobs: [mailJob('m')],
        agents: { assistant: { channels: ['chat_a'], credentials: { mail: 'work' } } },
        accounts: {
          mail: { work: { provider: 'imap', host, tls: 'none', user: 'alice', password: 'secret' } },
        },
      });
      cleanup.push(() => h.close());
      await h.service.start();
      expect(h.service.rejected(), host).toEqual([
        expect.objectContaining({
          id: 'm',
          issues: [
            expect.objectContaining({
              code: 'POLLER_INVALID_CONFIG',
              message: expect.stringContaining(
                `mail account "work" (plugins/mail.yaml accounts.work): tls: none sends the password in plain text and is only allowed for a loopback host (localhost, 127.0.0.1, ::1), not "${host}"`,
              ),
              hint: 'use tls: implicit (port 993) or tls: starttls (port 143), or a loopback host',
            }),
          ],
        }),
      ]);
    }
  });

  it('access_token logs in with AUTHENTICATE XOAUTH2 carrying the token; Dovecot checks it', async () => {
    const relay = await startImapRelay(secure.port);
    cleanup.push(() => relay.close());
    const h = await setup({ tls: 'none', port: relay.port, access_token: secure.oauth2Token });
    expect(h.dispatcher.texts()).toEqual(['over tls from orders@shop.example']);
    const auth = relay.sent().filter((l) => /^\S+ AUTHENTICATE /i.test(l));
    expect(auth).toHaveLength(1);
    const [, mech, initial] = /^\S+ AUTHENTICATE (\S+) (\S+)$/i.exec(auth[0]!)!;
    expect(mech).toBe('XOAUTH2');
    // RFC: "user=" user ^A "auth=Bearer " token ^A ^A, base64 (the initial response, SASL-IR).
    expect(Buffer.from(initial!, 'base64').toString('utf8')).toBe(
      `user=alice\x01auth=Bearer ${secure.oauth2Token}\x01\x01`,
    );
    expect(secure.introspected()).toContain(secure.oauth2Token);
  });

  it('a token the server refuses is Permanent, and the refused connection is closed at once', async () => {
    const relay = await startImapRelay(secure.port);
    cleanup.push(() => relay.close());
    const h = await setup({ tls: 'none', port: relay.port, access_token: 'revoked-token' });
    const st = await h.service.show('m');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/connect failed: authentication failed \[AUTHENTICATIONFAILED\]/);
    expect(secure.introspected()).toContain('revoked-token');
    await expect.poll(() => relay.open(), { timeout: 2000 }).toBe(0);
  });
});
