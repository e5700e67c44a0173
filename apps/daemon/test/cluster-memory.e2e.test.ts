// Conversation memory in cluster mode through real daemons on the real PostgreSQL and NATS: a conversation
// begun on one daemon and continued on another gives the model its whole history, and no daemon writes a
// SQLite memory file.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createFakeTelegram, type FakeTelegram } from '@agent/channels/testing';
import { createFakeOpenAI, openaiText, type FakeModelServer } from '@agent/model-providers/testing';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  baseConfig,
  daemonScope,
  runCli,
  SLOW_WATCHER,
  type Workdir,
  dropInboundStream,
  until,
} from './harness.js';

const TOKEN = '123456:bot-token-abcdef';
const scope = daemonScope();
afterAll(dropInboundStream);
let db: ScratchSchema;
let tg: FakeTelegram;
let llm: FakeModelServer;
beforeEach(async () => {
  db = await scratchSchema('clm');
  tg = await createFakeTelegram({ token: TOKEN });
  llm = await createFakeOpenAI();
});
afterEach(async () => {
  await tg.close();
  await llm.close();
  await db.drop();
});

const clusterYaml = (id: string) =>
  `daemon_id: ${id}\npostgres:\n  url: ${db.url}\n  schema: ${db.schema}\n  pool_max: 3\nheartbeat:\n  interval_secs: 1\n  stale_after_secs: 3\n`;

/** Host A holds the whole config (a `chat_b` agent); host B only its host-local files. */
function hosts(): { a: Workdir; b: Workdir } {
  const full = baseConfig({ broker: 'nats', runtime: SLOW_WATCHER });
  const a = scope.workdir({
    ...full,
    'llm.yaml': `providers:\n  main:\n    type: openai\n    base_url: ${llm.baseUrl}\n    api_key: key-one-1111\n    max_retries: 0\n`,
    'plugins/chat_b.yaml': `instances:\n  main:\n    base_url: ${tg.baseUrl}\n    bot_token: "${TOKEN}"\n    poll_timeout_secs: 1\n`,
    'agents.d/a.yaml':
      'model:\n  provider: main\n  name: m1\nsystem_prompt: You are A.\ninbound_bindings:\n  - plugin: chat_b\n    instance: main\n',
    'cluster.yaml': clusterYaml('host-a'),
  });
  const b = scope.workdir({
    'broker.yaml': full['broker.yaml']!,
    'runtime.yaml': SLOW_WATCHER,
    'cluster.yaml': clusterYaml('host-b'),
  });
  return { a, b };
}

const waitUntil = async (cond: () => boolean, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
};

const messagesOf = (i: number) =>
  (llm.requests[i]!.body as { messages: { role: string; content: string }[] }).messages;

/** The roles of every memory row, in order. */
const memoryRoles = async (): Promise<string[]> =>
  (await db.pool.query(`SELECT role FROM ${db.schema}.memory_message ORDER BY id`)).rows.map(
    (r: { role: string }) => r.role,
  );

describe('cluster mode: conversation memory in PostgreSQL', () => {
  it('a conversation continued on another daemon gives the model its whole history', async () => {
    const { a, b } = hosts();
    const pushed = await runCli(a, ['config', 'push', '--config-dir', 'config']);
    expect(pushed.code, pushed.stderr).toBe(0);
    let reply = 0;
    llm.setHandler(() => openaiText(`reply ${++reply}`));

    const da = await scope.start(a);
    const first = tg.enqueueText({ chatId: 42, text: 'my name is Ada' });
    await waitUntil(() => tg.sends.length === 1);
    // Host A confirmed the update before it stops: host B must not see it again.
    await waitUntil(() => tg.getUpdatesOffsets.at(-1) === first + 1);
    expect(await da.stop('SIGTERM')).toBe(0);

    const dbb = await scope.start(b);
    tg.enqueueText({ chatId: 42, text: 'what is my name?' });
    await waitUntil(() => tg.sends.length === 2);
    expect(dbb.count(/inbound matched binding/)).toBe(1);
    expect(messagesOf(1)).toEqual([
      { role: 'system', content: 'You are A.' },
      { role: 'user', content: 'my name is Ada' },
      { role: 'assistant', content: 'reply 1' },
      { role: 'user', content: 'what is my name?' },
    ]);
    expect(tg.sends.map((s) => s.text)).toEqual(['reply 1', 'reply 2']);
    // Memory is in PostgreSQL: neither host has the SQLite file of memory.yaml `path`.
    expect(existsSync(join(a.root, 'data', 'memory.db'))).toBe(false);
    expect(existsSync(join(b.root, 'data', 'memory.db'))).toBe(false);
    // The exchange is stored after its reply is sent: wait for the second pair, then look at all rows.
    await until(async () => (await memoryRoles()).length >= 4, 5000, 'the second exchange in memory');
    expect(await memoryRoles()).toEqual(['user', 'assistant', 'user', 'assistant']);
  });
});
