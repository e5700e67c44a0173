// Chat across daemons in cluster mode, through real daemons on the real PostgreSQL and NATS JetStream: one
// daemon at a time polls a chat_b bot, every message is answered once and in order per chat, and a killed
// owner's bot is polled again by another daemon within the owner TTL + 3 s, its offset resumed.
import { readdirSync } from 'node:fs';
import { signWebhookBody } from '@agent/channels';
import {
  createFakeTelegram,
  createFakeWhatsApp,
  textWebhookPayload,
  type FakeTelegram,
} from '@agent/channels/testing';
import { createFakeOpenAI, openaiText, type FakeModelServer } from '@agent/model-providers/testing';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  baseConfig,
  daemonScope,
  runCli,
  SLOW_WATCHER,
  until,
  type DaemonProcess,
  type Workdir,
  dropInboundStream,
} from './harness.js';

const TOKEN = '123456:bot-token-chatcluster';
const OWNER_TTL_SECS = 3;
const PARTITIONS = 4;
const IDS = ['host-a', 'host-b'];
const scope = daemonScope();
afterAll(dropInboundStream);
let db: ScratchSchema;
let tg: FakeTelegram;
let llm: FakeModelServer;
beforeEach(async () => {
  db = await scratchSchema('clc');
  tg = await createFakeTelegram({ token: TOKEN });
  llm = await createFakeOpenAI();
  // The reply names the message it answers and how many earlier user messages the turn saw.
  llm.setHandler((req) => {
    const msgs = (req.body as { messages: { role: string; content: string }[] }).messages;
    const users = msgs.filter((m) => m.role === 'user');
    return openaiText(`re ${users.at(-1)?.content} after ${users.length - 1}`);
  });
});
afterEach(async () => {
  await tg.close();
  await llm.close();
  await db.drop();
});

const clusterYaml = (id: string) =>
  `daemon_id: ${id}\npostgres:\n  url: ${db.url}\n  schema: ${db.schema}\n  pool_max: 6\n` +
  `heartbeat:\n  interval_secs: 1\n  stale_after_secs: 3\n` +
  `chat:\n  partitions: ${PARTITIONS}\n  owner_ttl_secs: ${OWNER_TTL_SECS}\n  ack_wait_secs: 5\n`;

/**
 * Host a holds the whole config (a chat_b agent); the others only their host-local files. `tokenFile`: the
 * bot token is `${file:secrets/bot.token}`, a secret file on each host, holding that text.
 */
function hosts(ids: string[], tokenFile?: string): Workdir[] {
  const full = baseConfig({ broker: 'nats', runtime: SLOW_WATCHER });
  const ws = ids.map((id, i) =>
    scope.workdir(
      i === 0
        ? {
            ...full,
            'llm.yaml': `providers:\n  main:\n    type: openai\n    base_url: ${llm.baseUrl}\n    api_key: key-one-1111\n    max_retries: 0\n`,
            'plugins/chat_b.yaml': `instances:\n  main:\n    base_url: ${tg.baseUrl}\n    bot_token: ${tokenFile === undefined ? `"${TOKEN}"` : '${file:secrets/bot.token}'}\n    poll_timeout_secs: 1\n`,
            'agents.d/a.yaml':
              'model:\n  provider: main\n  name: m1\nsystem_prompt: You are A.\ninbound_bindings:\n  - plugin: chat_b\n    instance: main\n',
            'cluster.yaml': clusterYaml(id),
          }
        : {
            'broker.yaml': full['broker.yaml']!,
            'runtime.yaml': SLOW_WATCHER,
            'cluster.yaml': clusterYaml(id),
          },
    ),
  );
  if (tokenFile !== undefined) for (const w of ws) w.write('../secrets/bot.token', `${tokenFile}\n`, 0o600);
  return ws;
}

const OWNER = /channel owner acquired/;
/** Pushes host a's config, starts a daemon per host and waits until one of them owns chat_b/main. */
async function startCluster(ws: Workdir[]): Promise<{ ds: DaemonProcess[]; owner: DaemonProcess }> {
  const pushed = await runCli(ws[0]!, ['config', 'push', '--config-dir', 'config']);
  expect(pushed.code, pushed.stderr).toBe(0);
  const ds: DaemonProcess[] = [];
  for (const w of ws) ds.push(await scope.start(w));
  await until(() => ds.some((d) => d.count(OWNER) > 0), 10_000, 'an owner of chat_b/main');
  return { ds, owner: ds.find((d) => d.count(OWNER) > 0)! };
}

const repliesTo = (chat: number) => tg.sends.filter((s) => s.chatId === String(chat)).map((s) => s.text);

/** A signed `chat_a` webhook with one text message, posted to a daemon's listener. */
const postWebhook = (port: number, id: string, text: string) => {
  const body = JSON.stringify(textWebhookPayload([{ phoneNumberId: '1', from: '4915100', id, text }]));
  return fetch(`http://127.0.0.1:${port}/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': signWebhookBody(body, 'sec-1234'),
    },
    body,
  });
};

interface StatusJson {
  members: { daemon_id: string; state: string; inbound_partitions: number | null }[];
  channel_owners: {
    plugin: string;
    instance: string;
    daemon_id: string;
    term: number;
    expires_in_ms: number;
  }[];
}

async function statusJson(w: Workdir, d: DaemonProcess): Promise<StatusJson> {
  const r = await runCli(w, ['cluster', 'status', '--json', '--admin-url', d.adminUrl]);
  expect(r.code, r.stdout + r.stderr).not.toBe(1);
  return JSON.parse(r.stdout) as StatusJson;
}

const partitionsOf = (s: StatusJson) =>
  Object.fromEntries(s.members.map((m) => [m.daemon_id, m.inbound_partitions]));

describe('cluster mode: chat across daemons', () => {
  it('one daemon polls the bot; each message is answered once and in order; a killed owner is replaced within the TTL + 3 s', async () => {
    const ws = hosts(['host-a', 'host-b', 'host-c']);
    const { ds, owner } = await startCluster(ws);
    // The partitions spread as members join: each is run by one daemon, and not all by the same one.
    const ownedPartitions = () =>
      Promise.all(ds.map(async (d) => (await d.metric('agent_inbound_partitions_owned')) ?? 0));
    await until(
      async () => {
        const owned = await ownedPartitions();
        return owned.reduce((a, b) => a + b, 0) === PARTITIONS && Math.max(...owned) < PARTITIONS;
      },
      20_000,
      'four partitions spread over the daemons',
    );

    // Three chats, three messages each, sent at once.
    for (let n = 1; n <= 3; n++)
      for (const chat of [1, 2, 3]) tg.enqueueText({ chatId: chat, text: `c${chat}m${n}` });
    await until(() => tg.sends.length >= 9, 20_000, 'nine replies');
    for (const chat of [1, 2, 3])
      expect(repliesTo(chat)).toEqual([
        `re c${chat}m1 after 0`,
        `re c${chat}m2 after 1`,
        `re c${chat}m3 after 2`,
      ]);
    // Nobody else polled: Telegram would have answered a second consumer with 409.
    for (const d of ds) {
      expect(d.count(/another consumer polls this bot/)).toBe(0);
      expect(d.count(OWNER)).toBe(d === owner ? 1 : 0);
    }
    // Each exchange is stored just after its reply: all nine are, before the kill.
    await until(
      async () =>
        (await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schema}.memory_message`)).rows[0].n === 18,
      5000,
      'nine exchanges in memory',
    );
    // SIGKILL the owner: another daemon polls the bot again within the TTL + 3 s, from the stored offset.
    const polledBefore = tg.getUpdatesOffsets.length;
    const lastOffset = tg.getUpdatesOffsets.at(-1);
    const killedAt = Date.now();
    await owner.stop('SIGKILL');
    const rest = ds.filter((d) => d !== owner);
    await until(
      () => rest.some((d) => d.count(OWNER) > 0),
      (OWNER_TTL_SECS + 3) * 1000 + 2000,
      'a new owner',
    );
    await until(() => tg.getUpdatesOffsets.length > polledBefore, 5000, 'a poll by the new owner');
    expect(Date.now() - killedAt).toBeLessThanOrEqual((OWNER_TTL_SECS + 3) * 1000);
    expect(tg.getUpdatesOffsets.slice(polledBefore)[0]).toBe(lastOffset);

    // The conversation goes on with its whole history, on the daemons left.
    for (const chat of [1, 2, 3]) tg.enqueueText({ chatId: chat, text: `c${chat}m4` });
    await until(() => tg.sends.length >= 12, 30_000, 'three more replies');
    for (const chat of [1, 2, 3]) expect(repliesTo(chat).at(-1)).toBe(`re c${chat}m4 after 3`);
    expect(tg.sends).toHaveLength(12);
    // Each daemon writes its part of a session's transcript to a file named after it.
    const transcripts = ws.map((w) =>
      readdirSync(w.root, { recursive: true, encoding: 'utf8' }).filter((f) => f.includes('b0-chat_b-main-')),
    );
    expect(transcripts.flat().length).toBeGreaterThan(0);
    transcripts.forEach((files, i) => {
      for (const f of files) expect(f).toMatch(new RegExp(`b0-chat_b-main-\\d\\.host-${'abc'[i]}\\.jsonl$`));
    });
  });

  it('a bot token rotated on every host is refused by `agent reload` with the fix, and reaches the owner as the next version', async () => {
    const ws = hosts(['host-a', 'host-b'], '123456:an-old-token');
    const { ds, owner } = await startCluster(ws);
    // The old token is refused (401): the owner keeps trying, nothing is taken.
    await owner.waitFor(/channel poll failed.* status=401/, 10_000);
    tg.enqueueText({ chatId: 5, text: 'after the rotation' });

    for (const w of ws) w.write('../secrets/bot.token', `${TOKEN}\n`, 0o600);
    // The bundle did not change: each daemon finds its secret changed under the running version and says
    // how to apply it, never that it applied it.
    const reload = await runCli(ws[0]!, ['reload', '--config-dir', 'config']);
    expect(reload.code, reload.stdout + reload.stderr).toBe(2);
    expect(reload.stdout).toMatch(/^daemons 2\/2 answered/m);
    expect(reload.stdout).toContain('agent config push --new-version');
    for (const d of ds) {
      expect(d.count(/config reload applied/)).toBe(0);
      expect(d.count(/code=DAEMON_HOST_FILES_CHANGED/)).toBe(1);
    }

    const bumped = await runCli(ws[0]!, ['config', 'push', '--new-version', '--config-dir', 'config']);
    expect(bumped.stdout).toMatch(/^config v2 pushed/m);
    for (const d of ds) await d.waitFor(/msg="config reload applied" version=2 /, 8000);
    for (const d of ds)
      await d.waitFor(/msg="channel credentials updated".* plugin=chat_b instance=main/, 5000);
    await until(() => tg.sends.length === 1, 15_000, 'the reply with the new token', ds);
    expect(tg.sends[0]).toMatchObject({ chatId: '5', text: 're after the rotation after 0' });
    for (const d of ds) expect(d.lines.join('\n')).not.toContain('an-old-token');
  });

  it('a chat_a webhook is taken by any daemon, and a vendor retry that reaches another daemon is one turn', async () => {
    const wa = await createFakeWhatsApp();
    try {
      const ws = hosts(['host-a', 'host-b']);
      ws[0]!.write(
        'plugins/chat_a.yaml',
        `instances:\n  wa:\n    phone_number_id: "1"\n    access_token: tok-1234\n    app_secret: sec-1234\n    verify_token: ver-1234\n    base_url: ${wa.baseUrl}\n    listen: 127.0.0.1:0\n`,
      );
      ws[0]!.write(
        'agents.d/a.yaml',
        'model:\n  provider: main\n  name: m1\nsystem_prompt: You are A.\ninbound_bindings:\n  - plugin: chat_a\n    instance: wa\n',
      );
      const pushed = await runCli(ws[0]!, ['config', 'push', '--config-dir', 'config']);
      expect(pushed.code, pushed.stderr).toBe(0);
      const ds: DaemonProcess[] = [];
      for (const w of ws) ds.push(await scope.start(w));
      const ports = await Promise.all(
        ds.map(async (d) =>
          Number(
            /msg="channel webhook listening".* port=(\d+)/.exec(
              await d.waitFor(/channel webhook listening/),
            )![1],
          ),
        ),
      );
      // The same message to both daemons (a retry after a lost 200), then the next one to either.
      const answers = await Promise.all([
        postWebhook(ports[0]!, 'wamid.1', 'hello'),
        postWebhook(ports[1]!, 'wamid.1', 'hello'),
      ]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      expect((await postWebhook(ports[1]!, 'wamid.2', 'again')).status).toBe(200);
      await until(() => wa.sends.length >= 2, 15_000, 'two replies');
      // A duplicate turn would answer within the turn's time; give it that long to show up.
      await new Promise((r) => setTimeout(r, 1000));
      expect(wa.sends.map((x) => x.text)).toEqual(['re hello after 0', 're again after 1']);
      expect(ds.reduce((n, d) => n + d.count(/inbound matched binding/), 0)).toBe(2);
    } finally {
      await wa.close();
    }
  });

  it('`agent cluster status` names the one daemon polling the bot and the partitions each daemon runs, and follows the bot to the next owner', async () => {
    const ws = hosts(IDS);
    const { ds, owner } = await startCluster(ws);
    const ownerAt = ds.indexOf(owner);
    const other = ds[1 - ownerAt]!;
    // The partitions spread evenly over the two daemons, as each daemon's own gauge says.
    const gauges = () =>
      Promise.all(ds.map(async (d) => (await d.metric('agent_inbound_partitions_owned')) ?? 0));
    await until(
      async () => (await gauges()).every((n) => n === PARTITIONS / 2),
      20_000,
      'two partitions each',
    );

    // Any daemon answers for the cluster: asked at the daemon that does not poll the bot.
    const s = await statusJson(ws[0]!, other);
    expect(s.channel_owners).toHaveLength(1);
    expect(s.channel_owners[0]).toMatchObject({
      plugin: 'chat_b',
      instance: 'main',
      daemon_id: IDS[ownerAt],
      term: 1,
    });
    expect(s.channel_owners[0]!.expires_in_ms).toBeGreaterThan(0);
    expect(s.channel_owners[0]!.expires_in_ms).toBeLessThanOrEqual(OWNER_TTL_SECS * 1000);
    const held = await gauges();
    expect(partitionsOf(s)).toEqual({ [IDS[0]!]: held[0], [IDS[1]!]: held[1] });
    expect(held.reduce((a, b) => a + b, 0)).toBe(PARTITIONS);
    for (const d of ds) expect(d.count(OWNER)).toBe(d === owner ? 1 : 0);

    const plain = await runCli(ws[1]!, ['cluster', 'status', '--admin-url', owner.adminUrl]);
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    const lines = plain.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/\bJOBS +PARTITIONS +TICKS\b/);
    expect(lines.slice(-2)).toEqual(['channel owners:', `  chat_b/main  ${IDS[ownerAt]}  term 1`]);

    // The owner stops: it gives the bot up at once, the other daemon takes it under the next term, and the
    // status shows the new owner and every partition on the daemon left.
    await owner.stop('SIGTERM');
    await other.waitFor(OWNER, (OWNER_TTL_SECS + 3) * 1000);
    let after: StatusJson | undefined;
    await until(
      async () => {
        after = await statusJson(ws[1 - ownerAt]!, other);
        return after.members.find((m) => m.daemon_id === IDS[1 - ownerAt])?.inbound_partitions === PARTITIONS;
      },
      20_000,
      'every partition on the daemon left',
    );
    expect(after!.channel_owners.map((o) => [`${o.plugin}/${o.instance}`, o.daemon_id, o.term])).toEqual([
      ['chat_b/main', IDS[1 - ownerAt], 2],
    ]);
    expect(after!.members.find((m) => m.daemon_id === IDS[ownerAt])).toMatchObject({
      state: 'left',
      inbound_partitions: 0,
    });
  });
});
