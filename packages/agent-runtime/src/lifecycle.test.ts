import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { builtinChannels, type ChannelPlugin } from '@agent/channels';
import { createFakeTelegram } from '@agent/channels/testing';
import { createSnapshotStore } from '@agent/config-snapshot';
import { createMemoryLogger } from '@agent/log';
import {
  anthropicText,
  createFakeAnthropic,
  createFakeOpenAI,
  openaiCompletion,
  openaiText,
  type FakeModelServer,
} from '@agent/model-providers/testing';
import { scratchSchema } from '@agent/pg/testing';
import { APOLOGY_TEXT, createAgentRuntime, openConversationMemory, transcriptFileName } from './index.js';
import { createPostgresMemory } from './postgres.js';
import {
  agentYaml,
  binding,
  createTestEnv,
  deliveries,
  gate,
  inbound,
  providerYaml,
  readJsonl,
  startRuntime,
  waitFor,
  type Harness,
  type TestEnv,
} from '../test/helpers.js';

type Body = Record<string, unknown>;
type OpenAIMsg = { role: string; content: unknown };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

async function setup(
  opts: { files?: Record<string, string>; ownMemory?: boolean; agent?: string } = {},
): Promise<{ env: TestEnv; fake: FakeModelServer; h: Harness }> {
  const fake = await createFakeOpenAI();
  cleanups.push(() => fake.close());
  const env = createTestEnv();
  cleanups.push(() => env.cleanup());
  env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-main-1')}`);
  env.write(
    'agents.d/a.yaml',
    opts.agent ?? agentYaml({ bindings: binding({ allowlist: { log: ['alice'] } }) }),
  );
  for (const [rel, y] of Object.entries(opts.files ?? {})) env.write(rel, y);
  const h = await startRuntime(env, opts.ownMemory ? { memory: undefined } : {});
  cleanups.push(async () => {
    await h.runtime.stop({ graceMs: 0 });
  });
  return { env, fake, h };
}

const messagesOf = (body: unknown): OpenAIMsg[] => (body as Body).messages as OpenAIMsg[];

describe('agents that join at a reload', () => {
  it('an agent whose file was invalid at start gets its directories at the reload that applies it', async () => {
    const { env, h } = await setup({ files: { 'agents.d/b.yaml': 'model: [broken' } });
    expect([...h.store.current().agents.keys()]).toEqual(['a']);
    env.write('agents.d/b.yaml', agentYaml({ bindings: binding({ allowlist: { log: ['alice'] } }) }));
    h.store.swap(env.load(h.store.current()));
    const b = h.store.current().agents.get('b')!;
    expect([b.workspace, b.skillsDir, b.transcriptsDir].map((d) => existsSync(d))).toEqual([
      true,
      true,
      true,
    ]);
  });
});

describe('stop', () => {
  it('lets a running turn finish within the grace period and drops queued messages', async () => {
    const { env, fake, h } = await setup();
    const slow = gate();
    fake.setHandler(async () => {
      await slow.promise;
      return openaiText('finished in time');
    });
    await h.runtime.handleInbound(inbound('first'));
    await h.runtime.handleInbound(inbound('queued'));
    await fake.waitForRequests(1);
    const stopping = h.runtime.stop({ graceMs: 5_000 });
    await expect(h.runtime.handleInbound(inbound('late'))).rejects.toMatchObject({
      code: 'RUNTIME_NOT_RUNNING',
    });
    slow.open();
    const report = await stopping;
    expect(report).toEqual({ finished: 1, aborted: 0, dropped: 1 });
    expect(h.runtime.state).toBe('stopped');
    expect(deliveries(env).map((d) => d.text)).toEqual(['finished in time']);
    expect(fake.requests).toHaveLength(1);
    expect(h.logger.find('turn dropped').map((r) => r.fields.reason)).toEqual(['shutdown']);
    const dir = h.store.current().agents.get('a')!.transcriptsDir;
    const types = readJsonl(join(dir, 'b0-log-default-chat-1.jsonl')).map((r) => r.type);
    expect(types.toSorted()).toEqual(['inbound', 'model_call', 'outbound', 'turn_dropped']);
  });

  it('aborts a turn still running at the deadline, sends nothing and leaves whole transcript lines', async () => {
    const { env, fake, h } = await setup();
    fake.reply({ hang: true });
    await h.runtime.handleInbound(inbound('never answered'));
    await fake.waitForRequests(1);
    const report = await h.runtime.stop({ graceMs: 30 });
    expect(report).toEqual({ finished: 0, aborted: 1, dropped: 0 });
    expect(h.logger.find('turn aborted').map((r) => r.fields.reason)).toEqual(['shutdown']);
    expect(deliveries(env)).toEqual([]);
    const dir = h.store.current().agents.get('a')!.transcriptsDir;
    const file = join(dir, readdirSync(dir)[0]!);
    expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
    expect(readJsonl(file).map((r) => [r.type, r.code])).toEqual([
      ['inbound', undefined],
      ['turn_error', 'RUNTIME_STOPPED'],
    ]);
  });
});

describe('stuck tools', () => {
  it('stop cancels a turn stuck in a tool that ignores its signal', async () => {
    const { env, fake, h } = await setup();
    let started = false;
    h.runtime.registerTools(() => [
      {
        name: 'stuck',
        description: 'Never returns.',
        parameters: { type: 'object' },
        handler: () => {
          started = true;
          return new Promise<never>(() => {});
        },
      },
    ]);
    fake.reply(openaiCompletion({ toolCalls: [{ id: 'c1', name: 'stuck', arguments: {} }] }));
    await h.runtime.handleInbound(inbound('go'));
    await waitFor(() => started, 'the tool to start');
    const report = await h.runtime.stop({ graceMs: 20 });
    expect(report.aborted).toBe(1);
    expect(deliveries(env)).toEqual([]);
    const dir = h.store.current().agents.get('a')!.transcriptsDir;
    const records = readJsonl(join(dir, 'b0-log-default-chat-1.jsonl'));
    expect(records.map((r) => r.type)).toEqual(['inbound', 'model_call', 'tool_call', 'turn_error']);
  });
});

describe('turn timeout', () => {
  it('aborts a turn after runtime.sessions.turn_timeout_ms and apologises', async () => {
    const { env, fake, h } = await setup({
      files: { 'runtime.yaml': `sessions:\n  turn_timeout_ms: 1000\n` },
    });
    fake.reply({ hang: true });
    await h.runtime.handleInbound(inbound('slow'));
    await h.runtime.whenIdle();
    expect(h.logger.find('turn failed')[0]!.fields.code).toBe('RUNTIME_TURN_TIMEOUT');
    expect(deliveries(env)).toHaveLength(1);
  });
});

describe('conversation memory', () => {
  it('gives the model the last max_messages messages of the same session only', async () => {
    const env0 = createTestEnv();
    cleanups.push(() => env0.cleanup());
    const dbPath = join(env0.root, 'mem', 'memory.db');
    const { fake, h } = await setup({
      ownMemory: true,
      files: { 'memory.yaml': `enabled: true\npath: ${dbPath}\nmax_messages: 3\n` },
    });
    let n = 0;
    fake.setHandler(() => openaiText(`reply ${++n}`));
    for (const t of ['first', 'second', 'third']) {
      await h.runtime.handleInbound(inbound(t));
      await h.runtime.whenIdle();
    }
    await h.runtime.handleInbound(inbound('other chat', { chatId: 'chat-9' }));
    await h.runtime.whenIdle();

    const convo = fake.requests.map((r) =>
      messagesOf(r.body)
        .slice(1)
        .map((m) => `${m.role}:${String(m.content)}`),
    );
    expect(convo[0]).toEqual(['user:first']);
    expect(convo[1]).toEqual(['user:first', 'assistant:reply 1', 'user:second']);
    // max_messages 3 cuts through an exchange: the dangling reply is left out.
    expect(convo[2]).toEqual(['user:second', 'assistant:reply 2', 'user:third']);
    expect(convo[3]).toEqual(['user:other chat']);
    expect(existsSync(dbPath)).toBe(true);
    expect(existsSync(`${dbPath}-wal`)).toBe(true);
  });

  it('gives no history when memory.enabled is false', async () => {
    const { fake, h } = await setup({ ownMemory: true, files: { 'memory.yaml': 'enabled: false\n' } });
    fake.setHandler(() => openaiText('ok'));
    for (const t of ['one', 'two']) {
      await h.runtime.handleInbound(inbound(t));
      await h.runtime.whenIdle();
    }
    expect(messagesOf(fake.requests[1]!.body).slice(1)).toEqual([{ role: 'user', content: 'two' }]);
  });

  it('fails a turn whose memory cannot be read: the apology, a logged code, nothing stored', async () => {
    const scratch = await scratchSchema('ar');
    cleanups.push(() => scratch.drop());
    const pool = scratch.openPool();
    const memory = await createPostgresMemory({ pool, schema: scratch.schema });
    await pool.end();
    const fake = await createFakeOpenAI();
    cleanups.push(() => fake.close());
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-main-1')}`);
    env.write('agents.d/a.yaml', agentYaml({ bindings: binding({ allowlist: { log: ['alice'] } }) }));
    env.write('memory.yaml', 'enabled: true\n');
    const h = await startRuntime(env, { memory });
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    fake.setHandler(() => openaiText('never asked'));
    await h.runtime.handleInbound(inbound('hello'));
    await h.runtime.whenIdle();
    expect(fake.requests).toHaveLength(0);
    expect(deliveries(env).map((d) => d.text)).toEqual([APOLOGY_TEXT]);
    expect(h.logger.find('turn failed')[0]?.fields).toMatchObject({ code: 'RUNTIME_MEMORY_FAILED' });
  });

  it('keeps exchanges across reopen', async () => {
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    const path = join(env.root, 'm.db');
    const m1 = openConversationMemory(path);
    await m1.appendExchange('k', 'u1', 'a1', new Date(0));
    await m1.appendExchange('k', 'u2', 'a2', new Date(0));
    await m1.close();
    const m2 = openConversationMemory(path);
    cleanups.push(() => m2.close());
    expect((await m2.history('k', 10)).map((m) => m.content)).toEqual(['u1', 'a1', 'u2', 'a2']);
  });

  it('fails with RUNTIME_MEMORY_FAILED when the database cannot be opened', () => {
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    writeFileSync(join(env.root, 'file'), 'x');
    expect(() => openConversationMemory(join(env.root, 'file', 'm.db'))).toThrow(
      expect.objectContaining({ code: 'RUNTIME_MEMORY_FAILED' }),
    );
  });
});

describe('memory on the Anthropic API', () => {
  it('sends history the messages API accepts (user first, alternating)', async () => {
    const fake = await createFakeAnthropic();
    cleanups.push(() => fake.close());
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'anthropic', fake.baseUrl, 'key-main-1')}`);
    env.write('agents.d/a.yaml', agentYaml());
    env.write('memory.yaml', `enabled: true\npath: ${join(env.root, 'memory.db')}\nmax_messages: 5\n`);
    const h = await startRuntime(env, { memory: undefined });
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    let n = 0;
    fake.setHandler(() => anthropicText(`answer ${++n}`));
    for (const t of ['q1', 'q2', 'q3', 'q4']) {
      await h.runtime.handleInbound(inbound(t));
      await h.runtime.whenIdle();
    }
    expect(deliveries(env).map((d) => d.text)).toEqual(['answer 1', 'answer 2', 'answer 3', 'answer 4']);
    const roles = (fake.requests[3]!.body as { messages: { role: string }[] }).messages.map((m) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
  });
});

describe('channel instances at start', () => {
  it('reports instances that cannot be created or started and runs the others', async () => {
    const fake = await createFakeOpenAI();
    cleanups.push(() => fake.close());
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-main-1')}`);
    env.write('agents.d/a.yaml', agentYaml());
    env.write('plugins/shaky.yaml', 'instances:\n  bad_config: {}\n  no_listen: {}\n  fine: {}\n');
    const shaky: ChannelPlugin = {
      name: 'shaky',
      instanceSchema: { type: 'object' },
      create(instance) {
        if (instance === 'bad_config')
          throw Object.assign(new Error('bad block'), { code: 'CHANNEL_CONFIG_INVALID' });
        return {
          start: async () => {
            if (instance === 'no_listen')
              throw Object.assign(new Error('port taken'), { code: 'CHANNEL_LISTEN_FAILED' });
          },
          send: async () => ({ ids: ['1'] }),
          stop: async () => {},
        };
      },
    };
    const store = createSnapshotStore(env.load());
    const logger = createMemoryLogger();
    const runtime = createAgentRuntime({
      store,
      channels: [...builtinChannels, shaky],
      logger,
      dataDir: env.dataDir,
      memory: null,
    });
    cleanups.push(async () => {
      await runtime.stop({ graceMs: 0 });
    });
    const report = await runtime.start();
    expect(report.started.map((i) => `${i.plugin}/${i.instance}`).sort()).toEqual([
      'log/default',
      'shaky/fine',
    ]);
    expect(report.failed.map((f) => [f.plugin, f.instance, f.code])).toEqual([
      ['shaky', 'bad_config', 'CHANNEL_CONFIG_INVALID'],
      ['shaky', 'no_listen', 'CHANNEL_LISTEN_FAILED'],
    ]);
    expect(logger.find('channel instance not created')).toHaveLength(1);
    expect(logger.find('channel instance start failed')).toHaveLength(1);
    expect(runtime.state).toBe('running');
  });
});

describe('transcripts', () => {
  it('writes one JSONL line per inbound, model call, tool call and result, and reply', async () => {
    const { h, fake } = await setup();
    fake.reply(
      openaiCompletion({
        toolCalls: [
          { id: 'c1', name: 'send_message', arguments: { channel: 'log', to: 'alice', text: 'hi' } },
        ],
      }),
      openaiText('done'),
    );
    const msg = inbound('go');
    await h.runtime.handleInbound(msg);
    await h.runtime.whenIdle();
    const dir = h.store.current().agents.get('a')!.transcriptsDir;
    const name = transcriptFileName({
      agentId: 'a',
      bindingIndex: 0,
      plugin: 'log',
      instance: 'default',
      chatId: 'chat-1',
    });
    expect(name).toBe('b0-log-default-chat-1.jsonl');
    const records = readJsonl(join(dir, name));
    expect(records.map((r) => r.type)).toEqual([
      'inbound',
      'model_call',
      'tool_call',
      'tool_result',
      'model_call',
      'outbound',
    ]);
    expect(records[0]).toMatchObject({ text: 'go', message_id: msg.messageId, snapshot_version: 1 });
    expect(records[3]).toMatchObject({ name: 'send_message', status: 'ok', is_error: false });
    expect(records[5]).toMatchObject({ to: 'chat-1', text: 'done', ts: '2026-03-01T10:00:00.000Z' });
  });

  it('cuts a torn last line left by a crash before appending', async () => {
    const { h, fake } = await setup();
    const dir = h.store.current().agents.get('a')!.transcriptsDir;
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'b0-log-default-chat-1.jsonl');
    writeFileSync(file, '{"type":"inbound","ok":1}\n{"type":"model_ca');
    fake.reply(openaiText('fine'));
    await h.runtime.handleInbound(inbound('after crash'));
    await h.runtime.whenIdle();
    const records = readJsonl(file); // throws on a torn line
    expect(records.map((r) => r.type)).toEqual(['inbound', 'inbound', 'model_call', 'outbound']);
  });

  it('names files of odd chat ids safely and distinctly', () => {
    const k = { agentId: 'a', bindingIndex: 0, plugin: 'log', instance: 'x' };
    const a = transcriptFileName({ ...k, chatId: '../../etc' });
    const b = transcriptFileName({ ...k, chatId: '.._.._etc' });
    expect(a).toMatch(/^[A-Za-z0-9_.-]+\.jsonl$/);
    expect(a).not.toContain('/');
    expect(a).not.toBe(b);
  });

  it('names files per daemon when given one, so daemons sharing a disk never write one file', () => {
    const k = { agentId: 'a', bindingIndex: 0, plugin: 'chat_b', instance: 'main', chatId: '42' };
    expect(transcriptFileName(k)).toBe('b0-chat_b-main-42.jsonl');
    expect(transcriptFileName(k, 'host-a')).toBe('b0-chat_b-main-42.host-a.jsonl');
    expect(transcriptFileName({ ...k, chatId: 'a/b' }, 'host-a')).toMatch(
      /^b0-chat_b-main-a_b-[0-9a-f]{10}\.host-a\.jsonl$/,
    );
  });
});

describe('deliver', () => {
  it("sends through the agent's binding of the channel in the current snapshot", async () => {
    const { env, h } = await setup();
    const res = await h.runtime.deliver({ agentId: 'a', channel: 'log', to: 'ops', text: 'item' });
    expect(res.ids).toHaveLength(1);
    expect(deliveries(env).map((d) => [d.instance, d.to, d.text])).toEqual([['default', 'ops', 'item']]);
  });

  it('fails with a code when the agent has no binding for the channel or does not exist', async () => {
    const { h } = await setup();
    await expect(
      h.runtime.deliver({ agentId: 'a', channel: 'chat_b', to: '1', text: 'x' }),
    ).rejects.toMatchObject({
      code: 'RUNTIME_NO_BINDING',
    });
    await expect(
      h.runtime.deliver({ agentId: 'zz', channel: 'log', to: '1', text: 'x' }),
    ).rejects.toMatchObject({
      code: 'RUNTIME_UNKNOWN_AGENT',
    });
  });
});

describe('chat_b end to end', () => {
  it('takes a message by long polling, replies by sendMessage, keeps the offset and rotates the token', async () => {
    const token = '123456:old-secret-token';
    const tg = await createFakeTelegram({ token });
    cleanups.push(() => tg.close());
    const fake = await createFakeOpenAI();
    cleanups.push(() => fake.close());
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-main-1')}`);
    env.write('agents.d/a.yaml', agentYaml({ bindings: binding({ plugin: 'chat_b', instance: 'bot' }) }));
    const tokenFile = join(env.root, 'bot.token');
    writeFileSync(tokenFile, token);
    chmodSync(tokenFile, 0o600);
    env.write(
      'plugins/chat_b.yaml',
      `instances:\n  bot:\n    base_url: ${tg.baseUrl}\n    bot_token: \${file:bot.token}\n    poll_timeout_secs: 1\n`,
    );
    const h = await startRuntime(env);
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    fake.reply(openaiText('hello from the agent'));
    const updateId = tg.enqueueText({ chatId: 42, text: 'hi bot' });
    await waitFor(() => tg.sends.length === 1, 'the reply');
    expect(tg.sends[0]).toMatchObject({ chatId: '42', text: 'hello from the agent' });
    expect(messagesOf(fake.requests[0]!.body).at(-1)).toEqual({ role: 'user', content: 'hi bot' });
    const stateFile = join(env.dataDir, 'channels', 'chat_b.json');
    await waitFor(
      () => existsSync(stateFile) && readFileSync(stateFile, 'utf8').includes(String(updateId + 1)),
      'offset',
    );
    expect(JSON.parse(readFileSync(stateFile, 'utf8'))).toEqual({ 'offset:bot': String(updateId + 1) });

    // Rotate the token file and reload: the running instance gets the new token in place.
    writeFileSync(tokenFile, '123456:new-secret-token');
    h.store.swap(env.load(h.store.current()));
    expect(h.logger.find('channel credentials updated').map((r) => r.fields)).toEqual([
      { plugin: 'chat_b', instance: 'bot' },
    ]);
    expect(h.runtime.reloadCredentials()).toEqual([]); // already applied on swap
    // The fake only knows the old token: a send now fails with 401, proving the new one is used.
    await expect(
      h.runtime.deliver({ agentId: 'a', channel: 'chat_b', to: '42', text: 'x' }),
    ).rejects.toMatchObject({
      code: 'CHANNEL_SEND_FAILED',
      status: 401,
    });
    expect(h.logger.lines.join('\n')).not.toContain('secret-token');
  });
});
