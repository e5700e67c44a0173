import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryKeyValueStore, type InboundMessage } from '@agent/channels';
import { createFakeTelegram } from '@agent/channels/testing';
import {
  createFakeOpenAI,
  openaiError,
  openaiText,
  type FakeModelServer,
} from '@agent/model-providers/testing';
import {
  AgentRuntimeError,
  APOLOGY_TEXT,
  type ConversationMemory,
  type InboundOutcome,
  type InboundSettle,
  type InboundSide,
} from './index.js';
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

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

async function setup(): Promise<{ env: TestEnv; fake: FakeModelServer }> {
  const fake = await createFakeOpenAI();
  cleanups.push(() => fake.close());
  const env = createTestEnv();
  cleanups.push(() => env.cleanup());
  env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-main-1')}`);
  return { env, fake };
}

describe('channel hosting', () => {
  it('hands a single-consumer instance to its owner, keeps its state where the host says and routes its messages through the ingress', async () => {
    const token = '123456:hosting-token';
    const tg = await createFakeTelegram({ token });
    cleanups.push(() => tg.close());
    const { env: e, fake } = await setup();
    e.write('agents.d/a.yaml', agentYaml({ bindings: binding({ plugin: 'chat_b', instance: 'bot' }) }));
    const tokenFile = join(e.root, 'bot.token');
    writeFileSync(tokenFile, token);
    chmodSync(tokenFile, 0o600);
    e.write(
      'plugins/chat_b.yaml',
      `instances:\n  bot:\n    base_url: ${tg.baseUrl}\n    bot_token: \${file:bot.token}\n    poll_timeout_secs: 1\n`,
    );
    const state = createMemoryKeyValueStore();
    const sides: InboundSide[] = [];
    let released = 0;
    const ingressed: InboundMessage[] = [];
    const outcomes: InboundOutcome[] = [];
    const h = await startRuntime(e, {
      hosting: {
        state: (plugin, instance) =>
          plugin === 'chat_b' && instance === 'bot' ? state : createMemoryKeyValueStore(),
        own: (side) => {
          sides.push(side);
          return {
            release: async () => {
              released++;
              await side.stop();
            },
          };
        },
        ingress: async (msg) => {
          ingressed.push(msg);
          await h.runtime.handleInbound(msg, (o) => outcomes.push(o));
        },
      },
    });
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    // Not started by the runtime: nobody polls until the owner starts the side.
    expect(sides.map((s) => `${s.plugin}/${s.instance}`)).toEqual(['chat_b/bot']);
    tg.enqueueText({ chatId: 7, text: 'hello' });
    await new Promise((r) => setTimeout(r, 300));
    expect(tg.getUpdatesOffsets).toEqual([]);

    fake.reply(openaiText('hi there'));
    await sides[0]!.start();
    await waitFor(() => tg.sends.length === 1, 'the reply');
    expect(ingressed.map((m) => m.text)).toEqual(['hello']);
    await waitFor(() => outcomes.length === 1, 'the settle');
    expect(outcomes).toEqual(['done']);
    await waitFor(() => state.get('offset:bot') !== undefined, 'the offset');
    expect(existsSync(join(e.dataDir, 'channels', 'chat_b.json'))).toBe(false);

    // Sending works whoever owns the inbound side.
    await h.runtime.deliver({ agentId: 'a', channel: 'chat_b', to: '7', text: 'out' });
    expect(tg.sends.map((s) => s.text)).toEqual(['hi there', 'out']);
    await h.runtime.stop({ graceMs: 0 });
    expect(released).toBe(1);
  });

  it('settles every message: done after its turn or a skip, abandoned when the shutdown drops or aborts it', async () => {
    const { env: e, fake } = await setup();
    e.write('agents.d/a.yaml', agentYaml({ bindings: binding({ allowlist: { log: ['alice'] } }) }));
    e.write('plugins/log.yaml', `instances:\n  default:\n    file: ${e.outFile}\n`);
    const h = await startRuntime(e);
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    const outcomes = new Map<string, InboundOutcome[]>();
    const settle = (id: string) => (o: InboundOutcome) => outcomes.set(id, [...(outcomes.get(id) ?? []), o]);

    fake.reply(openaiText('one'));
    await h.runtime.handleInbound(inbound('first', { messageId: 'm1' }), settle('m1'));
    await waitFor(() => outcomes.has('m1'), 'm1 settled');
    await h.runtime.handleInbound(inbound('again', { messageId: 'm1' }), settle('m1-dup'));
    await h.runtime.handleInbound(inbound('   ', { messageId: 'm2' }), settle('m2'));
    await h.runtime.handleInbound(inbound('x', { messageId: 'm3', plugin: 'chat_a' }), settle('m3'));
    expect(Object.fromEntries(outcomes)).toEqual({
      m1: ['done'],
      'm1-dup': ['done'],
      m2: ['done'],
      m3: ['done'],
    });

    const slow = gate();
    fake.setHandler(async () => {
      await slow.promise;
      return openaiText('late');
    });
    await h.runtime.handleInbound(inbound('running', { messageId: 'm4' }), settle('m4'));
    await h.runtime.handleInbound(inbound('queued', { messageId: 'm5' }), settle('m5'));
    await fake.waitForRequests(2);
    const report = await h.runtime.stop({ graceMs: 50 });
    slow.open();
    expect(report).toMatchObject({ aborted: 1, dropped: 1 });
    expect(outcomes.get('m4')).toEqual(['abandoned']);
    expect(outcomes.get('m5')).toEqual(['abandoned']);
  });
});

/** A memory whose reads fail while it is down (as when PostgreSQL does not answer); stored exchanges are kept. */
function unreliableMemory(o: { readable: boolean; writable: boolean }) {
  const stored: string[] = [];
  const memory: ConversationMemory = {
    async history() {
      if (!o.readable)
        throw new AgentRuntimeError('RUNTIME_MEMORY_FAILED', 'cannot read the memory: connection refused');
      return [];
    },
    async appendExchange(_key, user, assistant) {
      if (!o.writable)
        throw new AgentRuntimeError('RUNTIME_MEMORY_FAILED', 'cannot store the exchange: connection refused');
      stored.push(`${user} -> ${assistant}`);
    },
    async close() {},
  };
  return { memory, stored };
}

async function setupWith(
  memory: ConversationMemory,
): Promise<{ env: TestEnv; fake: FakeModelServer; h: Harness }> {
  const { env: e, fake } = await setup();
  e.write('agents.d/a.yaml', agentYaml({ bindings: binding({}) }));
  e.write('memory.yaml', 'enabled: true\n');
  const h = await startRuntime(e, { memory });
  cleanups.push(async () => {
    await h.runtime.stop({ graceMs: 0 });
  });
  return { env: e, fake, h };
}

/** A settle that records outcomes, telling the runtime whether the caller can run the message again. */
function recorder(canRetry?: boolean): { settle: InboundSettle; outcomes: InboundOutcome[] } {
  const outcomes: InboundOutcome[] = [];
  const record = (o: InboundOutcome): void => void outcomes.push(o);
  return { settle: canRetry === undefined ? record : Object.assign(record, { canRetry }), outcomes };
}

const transcript = (h: Harness) =>
  readJsonl(join(h.store.current().agents.get('a')!.transcriptsDir, 'b0-log-default-chat-1.jsonl'));

describe('a turn that cannot read its memory', () => {
  it('answers with the apology when the caller cannot run the message again (one host, or the last attempt)', async () => {
    for (const canRetry of [undefined, false]) {
      const { memory, stored } = unreliableMemory({ readable: false, writable: true });
      const { env: e, fake, h } = await setupWith(memory);
      const { settle, outcomes } = recorder(canRetry);
      await h.runtime.handleInbound(inbound('hello'), settle);
      await h.runtime.whenIdle();
      expect(fake.requests).toHaveLength(0);
      expect(deliveries(e).map((d) => d.text)).toEqual([APOLOGY_TEXT]);
      expect(outcomes).toEqual(['done']);
      expect(stored).toEqual([]);
      expect(h.logger.find('turn failed')[0]?.fields).toMatchObject({ code: 'RUNTIME_MEMORY_FAILED' });
      expect(h.logger.find('turn handed back')).toEqual([]);
    }
  });

  it('hands the message back when the caller can run it again: nothing sent or stored; its next delivery is answered', async () => {
    const link = { readable: false, writable: true };
    const { memory, stored } = unreliableMemory(link);
    const { env: e, fake, h } = await setupWith(memory);
    fake.setHandler(() => openaiText('hi there'));
    const msg = inbound('hello');
    const first = recorder(true);
    await h.runtime.handleInbound(msg, first.settle);
    await h.runtime.whenIdle();
    expect(first.outcomes).toEqual(['retry']);
    expect(fake.requests).toHaveLength(0);
    expect(deliveries(e)).toEqual([]);
    expect(stored).toEqual([]);
    expect(h.logger.find('turn failed')).toEqual([]);
    const handedBack = h.logger.find('turn handed back');
    expect(handedBack).toHaveLength(1);
    expect(handedBack[0]!.level).toBe('warn');
    expect(handedBack[0]!.fields).toMatchObject({
      agent_id: 'a',
      message_id: msg.messageId,
      code: 'RUNTIME_MEMORY_FAILED',
    });
    expect(transcript(h).map((r) => [r.type, r.code])).toEqual([
      ['inbound', undefined],
      ['turn_handed_back', 'RUNTIME_MEMORY_FAILED'],
    ]);

    // The same message again (its redelivery, here): not taken for a duplicate, answered once memory is back.
    link.readable = true;
    const second = recorder(true);
    await h.runtime.handleInbound(msg, second.settle);
    await h.runtime.whenIdle();
    expect(second.outcomes).toEqual(['done']);
    expect(deliveries(e).map((d) => d.text)).toEqual(['hi there']);
    expect(stored).toEqual(['hello -> hi there']);
  });

  it('keeps the apology for a model error, and sends the reply when only storing it fails, also with canRetry', async () => {
    const { memory, stored } = unreliableMemory({ readable: true, writable: false });
    const { env: e, fake, h } = await setupWith(memory);
    fake.reply(openaiError(401, 'Incorrect API key provided'), openaiText('answered'));
    const failing = recorder(true);
    await h.runtime.handleInbound(inbound('first'), failing.settle);
    await h.runtime.whenIdle();
    const unstored = recorder(true);
    await h.runtime.handleInbound(inbound('second'), unstored.settle);
    await h.runtime.whenIdle();
    expect(deliveries(e).map((d) => d.text)).toEqual([APOLOGY_TEXT, 'answered']);
    expect([failing.outcomes, unstored.outcomes]).toEqual([['done'], ['done']]);
    expect(h.logger.find('turn failed')[0]?.fields).toMatchObject({ code: 'MODEL_AUTH' });
    expect(h.logger.find('memory write failed')[0]?.fields).toMatchObject({ code: 'RUNTIME_MEMORY_FAILED' });
    expect(h.logger.find('turn handed back')).toEqual([]);
    expect(stored).toEqual([]);
  });
});
