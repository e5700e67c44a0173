// The mail kind over IMAP against a real Dovecot, through real daemon processes: SIGKILL between delivery
// and `\Seen`, a query IMAP cannot run refused where the config is read, and job replaces and removals
// counted in the server's own session list.
import { startDovecot, type DovecotServer } from '@agent/poller-kind-mail/testing';
import type { ImapFlow } from 'imapflow';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { daemonScope, NO_WATCHER, runCli } from './harness.js';
import { startImapHold, type ImapHold } from './imap-hold.js';
import { deliveries, ENV, providerFiles, waitUntil } from './provider-servers.js';

const scope = daemonScope();
let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

let dovecot: DovecotServer;
/** The test's own session: creates mailboxes, appends mail, reads flags. */
let admin: ImapFlow;
beforeAll(async () => {
  dovecot = await startDovecot();
  admin = await dovecot.session();
});
afterAll(async () => {
  await admin?.logout();
  await dovecot?.stop();
});

const account = (port: number, mailbox: string) => ({
  name: 'work',
  block: {
    provider: 'imap',
    host: '127.0.0.1',
    port,
    tls: 'none',
    user: dovecot.user,
    password: dovecot.password,
    mailbox,
    allow_private_networks: true,
  },
});

const mailJob = (id: string, template: string, query = 'is:unread', everySecs = 1) =>
  `    - id: ${id}\n      kind: mail\n      agent: a\n      schedule: { every_secs: ${everySecs} }\n      config:\n        query: "${query}"\n        dispatch_delay_ms: 0\n        message_template: "${template}"\n        deliver: { channel: log, to: op }\n`;

const pollersFile = (...jobs: string[]) => `pollers:\n  default_jitter_ms: 0\n  jobs:\n${jobs.join('')}`;

/** `orders`, and `tagged` with `query`. */
const twoJobs = (query: string) =>
  pollersFile(mailJob('orders', '{subject}'), mailJob('tagged', '{subject}', query, 60));

/** One job whose template says its version. */
const inboxJob = (v: number) => pollersFile(mailJob('inbox', `v${v} {subject}`));

const message = (n: number) =>
  [
    'From: Shop <orders@shop.example>',
    'To: alice@example.com',
    `Subject: Order ${n}`,
    'Date: Sun, 01 Mar 2026 10:00:00 +0000',
    `Message-ID: <order-${n}@shop.example>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `order number ${n}`,
    '',
  ].join('\r\n');

/** `\Seen` of each message by subject, as the server has it now. */
async function seenFlags(mailbox: string): Promise<Map<string, boolean>> {
  const lock = await admin.getMailboxLock(mailbox);
  try {
    const out = new Map<string, boolean>();
    for await (const m of admin.fetch('1:*', { uid: true, envelope: true, flags: true }, { uid: true }))
      // An unsolicited FETCH (a flag change by another session) carries no envelope.
      if (m.envelope?.subject) out.set(m.envelope.subject, m.flags?.has('\\Seen') === true);
    return out;
  } finally {
    lock.release();
  }
}

// Every kill lands between delivery and `\Seen`: the relay holds the `\Seen` STORE, so the flag cannot
// reach the server first, and the kill waits for the delivery line in the log channel's file. Even rounds
// kill at once on that line (the delivery may not be recorded yet: it may repeat once); odd rounds wait
// until the STORE is held (the delivery was recorded: it must never repeat). Each round costs a daemon
// start (1-5 s on a busy machine): 20 rounds take about 30 s, up to 100 s on a loaded machine.
const ROUNDS = 20;

describe('mail over IMAP through a real daemon (Dovecot)', () => {
  it(`SIGKILL between delivery and \\Seen, ${ROUNDS} times: nothing lost, at most one duplicate per crash`, async () => {
    const box = 'Crash';
    await admin.mailboxCreate(box);
    const total = ROUNDS + 3;
    const base = Date.now() - 60 * 60_000;
    for (let n = 1; n <= total; n++) await admin.append(box, message(n), [], new Date(base + n * 1000));
    const hold: ImapHold = await startImapHold(dovecot.port);
    cleanup.push(() => hold.close());
    const w = scope.workdir(
      providerFiles(pollersFile(mailJob('orders', '{subject}')), 'mail', account(hold.port, box)),
    );
    const rounds: { delivered: string; at: number; recorded: boolean }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const before = deliveries(w).length;
      const heldBefore = hold.held();
      const d = await scope.start(w, ENV);
      if (r % 2 === 0) await waitUntil('a delivery', () => deliveries(w).length > before, 15_000, 2);
      else await waitUntil('a held \\Seen', () => hold.held() > heldBefore, 15_000, 2);
      await d.stop('SIGKILL');
      await hold.settled();
      const delivered = deliveries(w).slice(before);
      // The mark-read of the delivered item waits on the held STORE: one delivery per round.
      expect(delivered).toHaveLength(1);
      rounds.push({ delivered: delivered[0]!.text, at: before, recorded: hold.held() > heldBefore });
      // The kill was before `\Seen`: the server still has every message unread.
      expect([...(await seenFlags(box)).values()].some(Boolean)).toBe(false);
    }
    hold.release();
    const last = await scope.start(w, ENV);
    await waitUntil('every message', () => new Set(deliveries(w).map((x) => x.text)).size === total);
    await waitUntil('the last one marked \\Seen', async () => (await seenFlags(box)).get(`Order ${total}`)!);
    await new Promise((r) => setTimeout(r, 1500));
    const texts = deliveries(w).map((x) => x.text);
    // 0 lost: every message, first deliveries in order of arrival.
    expect([...new Set(texts)]).toEqual(Array.from({ length: total }, (_, i) => `Order ${i + 1}`));
    // At most one duplicate per crash (each crash delivered one message): no message more than twice; a
    // delivery recorded before the kill is never repeated after it.
    expect(texts.length - total).toBeLessThanOrEqual(ROUNDS);
    const perMessage = new Map<string, number>();
    for (const t of texts) perMessage.set(t, (perMessage.get(t) ?? 0) + 1);
    expect(Math.max(...perMessage.values())).toBeLessThanOrEqual(2);
    for (const round of rounds)
      if (round.recorded) expect(texts.indexOf(round.delivered, round.at + 1), round.delivered).toBe(-1);
    expect(rounds.filter((x) => x.recorded).length).toBeGreaterThanOrEqual(ROUNDS / 2);
    // A recorded delivery of a crashed daemon keeps its mail unread (the follow-up is not repeated); the
    // deliveries of the last daemon are marked.
    const flags = await seenFlags(box);
    for (const round of rounds) if (round.recorded) expect(flags.get(round.delivered)).toBe(false);
    expect(flags.get(`Order ${total}`)).toBe(true);
    expect(last.count(/level=error/)).toBe(0);
  }, 180_000);

  it('a query IMAP cannot run is a located error of --check-config, boot and reload', async () => {
    const box = 'Checked';
    await admin.mailboxCreate(box);
    const w = scope.workdir(
      providerFiles(twoJobs('label:work is:unread'), 'mail', account(dovecot.port, box)),
    );
    const check = await runCli(w, ['--check-config', '--config-dir', 'config']);
    expect(check.code, check.stdout + check.stderr).toBe(1);
    // File, line and column of the value, the path, what is wrong and the fix.
    expect(check.stderr).toMatch(
      /error: job tagged: config\/pollers\.yaml:18:16 pollers\.jobs\[1\]\.config\.query: mail account "work" is an IMAP account, which cannot run this query: "label:work" at character 1: .* \[POLLER_INVALID_CONFIG\] \(fix: rewrite the query with from:, to:/,
    );
    expect(check.stdout).toMatch(/1 of 2 poller job\(s\) valid/);

    const d = await scope.start(w, ENV);
    expect(await d.waitFor(/msg="poller job rejected".*job_id=tagged/)).toMatch(/config\.query.*label:work/);
    let from = d.lines.length;
    w.writeByRename('pollers.yaml', twoJobs('from:shop.example is:unread'));
    expect(await d.waitFor(/msg="poller reload applied"/, 10_000, from)).toMatch(/add=tagged .*rejected=0/);
    from = d.lines.length;
    w.writeByRename('pollers.yaml', twoJobs('has:attachment'));
    expect(await d.waitFor(/msg="poller job rejected".*job_id=tagged/, 10_000, from)).toMatch(
      /config\.query.*has:attachment/,
    );
    // The rejected edit leaves the running definition in place, and the operator sees why.
    const jobs = (await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as {
      rejected: { id: string; errors: string[]; running: boolean }[];
    };
    expect(jobs.rejected).toEqual([
      {
        id: 'tagged',
        running: true,
        errors: [expect.stringMatching(/pollers\.jobs\[1\]\.config\.query: .*has:attachment/)],
      },
    ]);
  }, 60_000);

  it('replacing the job on reload never leaves two IMAP connections on the server', async () => {
    const box = 'Replace';
    await admin.mailboxCreate(box);
    const w = scope.workdir(providerFiles(inboxJob(1), 'mail', account(dovecot.port, box)));
    await admin.append(box, message(1), [], new Date());
    const d = await scope.start(w, ENV);
    await waitUntil('the first delivery', () => deliveries(w).length === 1);
    // The test's own admin session is one of the server's sessions.
    const daemonSessions = async () => (await dovecot.connections()) - 1;
    expect(await daemonSessions()).toBe(1);
    // Counts the server's sessions, as often as `doveadm who` answers, until the last replace ran.
    const sampling = { on: true, counted: [] as number[] };
    const sampler = (async () => {
      while (sampling.on) sampling.counted.push(await daemonSessions());
    })();
    sampler.catch(() => {});
    try {
      for (let v = 2; v <= 4; v++) {
        const from = d.lines.length;
        w.writeByRename('pollers.yaml', inboxJob(v));
        expect(await d.waitFor(/msg="poller reload applied"/, 10_000, from)).toMatch(/replace=inbox/);
        // After the replace, so that the new definition is the one that reads it over the kept connection.
        await admin.append(box, message(v), [], new Date());
        await waitUntil(`delivery ${v}`, () => deliveries(w).some((x) => x.text === `v${v} Order ${v}`));
      }
    } finally {
      sampling.on = false;
      await sampler;
    }
    expect(sampling.counted.length).toBeGreaterThan(5);
    expect(Math.max(...sampling.counted)).toBeLessThanOrEqual(1);
    expect(await daemonSessions()).toBe(1);
    expect(deliveries(w).map((x) => x.text)).toEqual([
      'v1 Order 1',
      'v2 Order 2',
      'v3 Order 3',
      'v4 Order 4',
    ]);
    expect(d.count(/level=error/)).toBe(0);
  }, 60_000);
  it('removing the last job of the account on reload closes its IMAP connection at once', async () => {
    const box = 'Remove';
    await admin.mailboxCreate(box);
    await admin.append(box, message(1), [], new Date());
    const w = scope.workdir({
      ...providerFiles(inboxJob(1), 'mail', account(dovecot.port, box)),
      // Only `agent reload` applies a change: the watcher never fires within the test.
      'runtime.yaml': NO_WATCHER,
    });
    const d = await scope.start(w, ENV);
    await waitUntil('the first delivery', () => deliveries(w).length === 1);
    // The test's own admin session is one of the server's sessions.
    const daemonSessions = async () => (await dovecot.connections()) - 1;
    expect(await daemonSessions()).toBe(1);
    w.writeByRename('pollers.yaml', 'pollers:\n  default_jitter_ms: 0\n  jobs: []\n');
    const from = d.lines.length;
    const reload = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(reload.code, reload.stderr).toBe(0);
    expect(await d.waitFor(/msg="poller reload applied"/, 10_000, from)).toMatch(/remove=inbox/);
    // Within seconds, long before the 2-minute idle close.
    await waitUntil('no daemon session left', async () => (await daemonSessions()) === 0, 10_000, 100);
    expect(deliveries(w)).toHaveLength(1);
    expect(d.count(/level=error/)).toBe(0);
  }, 60_000);
});
