// Chat across daemons in cluster mode, through real daemons on the real PostgreSQL and NATS JetStream: one
// daemon at a time polls a chat_b bot, every message is answered once and in order per chat, and a killed
// owner's bot is polled again by another daemon within the owner TTL + 3 s, its offset resumed.
import { createFakeTelegram, type FakeTelegram } from '@agent/channels/testing';
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
  `chat:\n  partitions: 4\n  owner_ttl_secs: ${OWNER_TTL_SECS}\n  ack_wait_secs: 5\n`;

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
const repliesTo = (chat: number) => tg.sends.filter((s) => s.chatId === String(chat)).map((s) => s.text);

describe('cluster mode: chat across daemons', () => {
  it('one daemon polls the bot; each message is answered once and in order; a killed owner is replaced within the TTL + 3 s', async () => {
    const ws = hosts(['host-a', 'host-b', 'host-c']);
    const pushed = await runCli(ws[0]!, ['config', 'push', '--config-dir', 'config']);
    expect(pushed.code, pushed.stderr).toBe(0);
    const ds: DaemonProcess[] = [];
    for (const w of ws) ds.push(await scope.start(w));
    await until(() => ds.some((d) => d.count(OWNER) > 0), 10_000, 'an owner of chat_b/main');
    const owner = ds.find((d) => d.count(OWNER) > 0)!;
    // The partitions spread as members join: each is run by one daemon, and not all by the same one.
    const ownedPartitions = () =>
      Promise.all(ds.map(async (d) => (await d.metric('agent_inbound_partitions_owned')) ?? 0));
    await until(
      async () => {
        const owned = await ownedPartitions();
        return owned.reduce((a, b) => a + b, 0) === 4 && Math.max(...owned) < 4;
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
  });

  it('a bot token rotated on every host is refused by `agent reload` with the fix, and reaches the owner as the next version', async () => {
    const ws = hosts(['host-a', 'host-b'], '123456:an-old-token');
    const pushed = await runCli(ws[0]!, ['config', 'push', '--config-dir', 'config']);
    expect(pushed.code, pushed.stderr).toBe(0);
    const ds: DaemonProcess[] = [];
    for (const w of ws) ds.push(await scope.start(w));
    await until(() => ds.some((d) => d.count(OWNER) > 0), 10_000, 'an owner of chat_b/main');
    const owner = ds.find((d) => d.count(OWNER) > 0)!;
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
    await until(() => tg.sends.length === 1, 15_000, 'the reply with the new token');
    expect(tg.sends[0]).toMatchObject({ chatId: '5', text: 're after the rotation after 0' });
    for (const d of ds) expect(d.lines.join('\n')).not.toContain('an-old-token');
  });
});
