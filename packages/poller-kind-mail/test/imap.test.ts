/**
 * The `mail` kind over IMAP against a real Dovecot, inside the real poller service (SQLite state): what only
 * IMAP has (MIME and charsets, query translation, one connection, UIDVALIDITY). The behaviours both providers
 * share are the table of `acceptance.test.ts`.
 */
import type { TestJobSpec } from '@agent/poller-runtime/testing';
import { countUnreadTool, imapAccount, mailJob as mailJobOf } from './helpers.js';
import type { ImapFlow } from 'imapflow';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mailPollerKind } from '../src/index.js';
import { startDovecot, type DovecotServer } from '../src/testing.js';
import { alternativeWithAttachment, htmlOnly, latin1Qp, plain, rawBytes } from './mime.js';
import { serviceHarness } from './service-harness.js';

const START = Date.parse('2026-03-01T12:00:00Z');
/** Raw header lines for `rawBytes`. */
const from = (s: string) => Buffer.from(`From: ${s}`);
const subject = (s: string) => Buffer.from(`Subject: ${s}`);
const MIN = 60_000;
const HOUR = 3_600_000;

let server: DovecotServer;
let admin: ImapFlow;
let boxes = 0;
beforeAll(async () => {
  server = await startDovecot();
  admin = await server.session();
});
afterAll(async () => {
  await admin?.logout();
  await server?.stop();
});

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

/** A fresh mailbox per test: state never leaks between tests. */
async function mailbox(): Promise<string> {
  const name = `T${++boxes}`;
  await admin.mailboxCreate(name);
  return name;
}

async function append(box: string, raw: string | Buffer, atMs: number, flags: string[] = []): Promise<void> {
  await admin.append(box, raw, flags, new Date(atMs));
}

async function seenFlags(box: string): Promise<boolean[]> {
  const lock = await admin.getMailboxLock(box);
  try {
    const out: boolean[] = [];
    for await (const m of admin.fetch('1:*', { uid: true, flags: true }, { uid: true }))
      out.push(m.flags!.has('\\Seen'));
    return out;
  } finally {
    lock.release();
  }
}

const account = (box: string, over: Record<string, unknown> = {}) => imapAccount(server, box, over);

/** Jobs of this file render every field the test checks. */
const mailJob = (id: string, config: Record<string, unknown> = {}, extra: Partial<TestJobSpec> = {}) =>
  mailJobOf(id, { message_template: '{subject} | {from_address} | {snippet}', ...config }, extra);

async function setup(jobs: TestJobSpec[], acct: Record<string, unknown>) {
  const h = serviceHarness(mailPollerKind, {
    jobs,
    start: new Date(START).toISOString(),
    agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
    accounts: { mail: { work: acct } },
    secrets: [server.password],
  });
  cleanup.push(() => h.close());
  await h.service.start();
  return h;
}

describe('mail over IMAP (Dovecot)', () => {
  it('back-fills oldest first, decodes MIME, marks \\Seen after delivery and never repeats', async () => {
    const box = await mailbox();
    await append(box, plain({ subject: 'outside' }, 'too old'), START - 3 * 24 * HOUR);
    await append(
      box,
      plain({ subject: '=?UTF-8?B?w4lsw6h2ZSDwn46J?=' }, 'utf-8 body ünïcödé'),
      START - 5 * HOUR,
    );
    await append(
      box,
      latin1Qp({ subject: '=?ISO-8859-1?Q?Caf=E9?=' }, 'Prix: 5=A4 =E0 payer=\r\nsoft break'),
      START - 4 * HOUR,
    );
    await append(
      box,
      alternativeWithAttachment({ subject: 'alt' }, 'plain wins', '<p>html loses</p>'),
      START - 3 * HOUR,
    );
    await append(
      box,
      htmlOnly({ subject: 'html' }, '<p>Hello&nbsp;<b>World</b></p><script>x()</script>'),
      START - 2 * HOUR,
    );
    await append(box, plain({ subject: 'read already' }, 'seen'), START - HOUR, ['\\Seen']);
    const h = await setup([mailJob('m', { max_per_tick: 3 })], account(box));
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual([
      'Élève 🎉 | orders@shop.example | utf-8 body ünïcödé',
      'Café | orders@shop.example | Prix: 5¤ à payersoft break',
      'alt | orders@shop.example | plain wins',
    ]);
    await h.advance(MIN);
    expect(h.dispatcher.texts().slice(3)).toEqual(['html | orders@shop.example | Hello\u00a0World']);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(4);
    expect(await seenFlags(box)).toEqual([false, true, true, true, true, true]);
    expect((await h.service.show('m')).last_status).toBe('ok');
  });

  it('the query is translated: from:, OR, -, subject phrases; sender_allowlist and extract apply', async () => {
    const box = await mailbox();
    await append(
      box,
      plain({ from: 'a@one.example', subject: 'Order 12 shipped' }, 'Tracking: ZX9'),
      START - 3 * HOUR,
    );
    await append(
      box,
      plain({ from: 'b@two.example', subject: 'Order 13 shipped' }, 'Tracking: QQ1'),
      START - 2 * HOUR,
    );
    // Matches the query and has a tracking number: only the allowlist keeps it out.
    await append(
      box,
      plain({ from: 'c@three.example', subject: 'Order 14 shipped' }, 'Tracking: AL1'),
      START - HOUR,
    );
    await append(box, plain({ from: 'd@two.example', subject: 'Order 15 shipped' }, 'none'), START - HOUR);
    await append(box, plain({ from: 'a@one.example', subject: 'newsletter' }, 'Tracking: NO'), START - HOUR);
    const query =
      '(from:one.example OR from:two.example OR from:three.example) "order" -subject:"13 shipped"';
    const h = await setup(
      [
        mailJob('m', {
          query,
          sender_allowlist: ['one.example', 'two.example'],
          extract: { tracking: 'Tracking: (\\w+)' },
          require_fields: ['tracking'],
          message_template: '{subject} {tracking}',
        }),
      ],
      account(box),
    );
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual(['Order 12 shipped ZX9']);
  });

  it('an untranslatable query rejects the job when it is loaded, at config.query with the fix', async () => {
    const box = await mailbox();
    const h = await setup([mailJob('m', { query: 'label:work is:unread' }), mailJob('ok')], account(box));
    const [rejected] = h.service.rejected();
    expect(rejected?.id).toBe('m');
    expect(rejected?.issues).toEqual([
      expect.objectContaining({
        code: 'POLLER_INVALID_CONFIG',
        path: 'pollers.jobs[0].config.query',
        message: expect.stringMatching(/mail account "work" is an IMAP account.*"label:work" at character 1/),
        hint: expect.stringMatching(/^rewrite the query with from:, to:/),
      }),
    ]);
    // The other job of the account loads and runs.
    await h.advance(0);
    expect((await h.service.show('ok')).last_status).toBe('ok');
  });

  it('a wrong password is Permanent (paused, alert); the password is in no log or status', async () => {
    const box = await mailbox();
    const h = await setup(
      [mailJob('m', {}, { failure_to: { channel: 'chat_b', to: 'ops' } })],
      account(box, { password: 'wrong-password' }),
    );
    await h.advance(0);
    const st = await h.service.show('m');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/authentication failed/);
    expect(JSON.stringify(h.logger.records) + st.last_error).not.toContain('wrong-password');
  });

  it('an unreachable server is Transient; a private host without allow_private_networks is refused', async () => {
    const box = await mailbox();
    const h = await setup([mailJob('m')], account(box, { port: 1 }));
    await h.advance(0);
    expect(await h.service.show('m')).toMatchObject({ paused: false, last_status: 'transient' });
    const h2 = await setup([mailJob('m2')], account(box, { allow_private_networks: false }));
    await h2.advance(0);
    const st = await h2.service.show('m2');
    expect(st).toMatchObject({ paused: true, last_status: 'permanent' });
    expect(st.last_error).toMatch(/host "127.0.0.1" is refused .*allow_private_networks/);
  });

  it('one connection serves all jobs of the account; stopping the service closes it', async () => {
    const box = await mailbox();
    await append(box, plain({ subject: 'a' }, 'x'), START - HOUR);
    const before = await server.connections();
    const h = await setup([mailJob('m1'), mailJob('m2', { query: 'from:shop.example' })], account(box));
    await h.advance(0);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(2);
    expect((await server.connections()) - before).toBe(1);
    await h.close();
    await expect.poll(async () => (await server.connections()) - before).toBe(0);
  });

  it('mail_count_unread counts with EXAMINE only: no flag changes, no deliveries', async () => {
    const box = await mailbox();
    await append(box, plain({ from: 'x@shop.example' }, 'x'), START - HOUR);
    await append(box, plain({ from: 'y@shop.example' }, 'y'), START - 10 * 24 * HOUR);
    await append(box, plain({ from: 'z@other.example' }, 'z'), START - HOUR);
    await append(box, plain({ from: 'w@shop.example' }, 'w'), START - HOUR, ['\\Seen']);
    const h = await setup([mailJob('m', { query: 'from:nobody.example' })], account(box));
    await h.advance(0);
    const count = countUnreadTool(h);
    expect(await count({ query: 'from:shop.example' })).toEqual({
      query: 'is:unread from:shop.example',
      count: 2,
      exact: true,
    });
    await expect(count({ query: 'has:attachment' })).rejects.toThrow(/has:attachment/);
    expect(await seenFlags(box)).toEqual([false, false, false, true]);
    expect(h.dispatcher.deliveries).toHaveLength(0);
  });
  it('decodes every charset the part names, an unknown one as windows-1252, and raw 8-bit headers', async () => {
    const box = await mailbox();
    const cp1252 = Buffer.from([
      ...Buffer.from('Prix: 5 '),
      0x80,
      ...Buffer.from(' '),
      0x97,
      ...Buffer.from(' na'),
      0xef,
      ...Buffer.from('ve'),
    ]);
    const koi8r = Buffer.from([0xf0, 0xd2, 0xc9, 0xd7, 0xc5, 0xd4]);
    // こんにちは in ISO-2022-JP: JIS X 0208 between ESC $ B and ESC ( B.
    const iso2022jp = Buffer.from([
      0x1b, 0x24, 0x42, 0x24, 0x33, 0x24, 0x73, 0x24, 0x4b, 0x24, 0x41, 0x24, 0x4f, 0x1b, 0x28, 0x42,
    ]);
    const mails: [Buffer[], string, Buffer][] = [
      [[from('a@shop.example'), subject('cp1252')], 'text/plain; charset=windows-1252', cp1252],
      [[from('a@shop.example'), subject('koi8')], 'text/plain; charset=KOI8-R', koi8r],
      [[from('a@shop.example'), subject('jis')], 'text/plain; charset=ISO-2022-JP', iso2022jp],
      [
        [from('a@shop.example'), subject('unknown label')],
        'text/html; charset=x-unknown-8bit',
        Buffer.from([...Buffer.from('<p>Caf'), 0xe9, ...Buffer.from('</p>')]),
      ],
      [
        // RFC 6532 UTF-8 in a header, and a legacy latin-1 display name.
        [
          Buffer.concat([Buffer.from('From: Jos'), Buffer.from([0xe9]), Buffer.from(' <jose@shop.example>')]),
          subject('Grüße aus Köln'),
        ],
        'text/plain; charset=utf-8',
        Buffer.from('ünïcödé'),
      ],
    ];
    for (const [i, [headers, type, body]] of mails.entries())
      await append(box, rawBytes(headers, type, body), START - (10 - i) * HOUR);
    const h = await setup(
      [mailJob('m', { message_template: '{subject} | {from} | {from_address} | {snippet}' })],
      account(box),
    );
    await h.advance(0);
    expect(h.dispatcher.texts()).toEqual([
      'cp1252 | a@shop.example | a@shop.example | Prix: 5 € — naïve',
      'koi8 | a@shop.example | a@shop.example | Привет',
      'jis | a@shop.example | a@shop.example | こんにちは',
      'unknown label | a@shop.example | a@shop.example | Café',
      'Grüße aus Köln | José <jose@shop.example> | jose@shop.example | ünïcödé',
    ]);
  });

  it('a UIDVALIDITY change is logged and mail within newer_than is considered again', async () => {
    const box = await mailbox();
    await append(box, plain({ subject: 'outside' }, 'too old'), START - 3 * 24 * HOUR);
    await append(box, plain({ subject: 'recent' }, 'x'), START - HOUR);
    const h = await setup(
      [
        mailJob('all', { query: 'from:shop.example', message_template: 'all: {subject} {id}' }),
        mailJob('unread', {
          query: 'is:unread',
          mark_read_on_dispatch: false,
          message_template: 'unread: {subject} {id}',
        }),
      ],
      account(box),
    );
    await h.advance(0);
    const [before] = (
      await server.doveadm('-f', 'flow', 'mailbox', 'status', '-u', server.user, 'uidvalidity', box)
    )
      .trim()
      .split('=')
      .slice(-1);
    expect(h.dispatcher.texts().toSorted()).toEqual([
      `all: recent ${before}:2`,
      `unread: recent ${before}:2`,
    ]);
    // `all` marked it \Seen after its delivery.
    expect(await seenFlags(box)).toEqual([false, true]);
    await server.doveadm('mailbox', 'update', '--uid-validity', '4242', '-u', server.user, box);
    await h.advance(MIN);
    // The same message under the new UIDVALIDITY: `all` delivers it again; `unread` no longer lists it.
    expect(h.dispatcher.texts().slice(2)).toEqual(['all: recent 4242:2']);
    const warned = h.logger
      .find('mailbox UIDVALIDITY changed: mail within newer_than is considered again')
      .map((r) => r.fields)
      .sort((a, b) => String(a.job_id).localeCompare(String(b.job_id)));
    expect(warned).toEqual([
      expect.objectContaining({ job_id: 'all', mailbox: box, from: before, to: '4242' }),
      expect.objectContaining({ job_id: 'unread', mailbox: box, from: before, to: '4242' }),
    ]);
    await h.advance(MIN);
    await h.advance(MIN);
    expect(h.dispatcher.texts()).toHaveLength(3);
    expect(
      h.logger.find('mailbox UIDVALIDITY changed: mail within newer_than is considered again'),
    ).toHaveLength(2);
  });
});
