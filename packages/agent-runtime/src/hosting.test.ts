import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryKeyValueStore, type InboundMessage } from '@agent/channels';
import { createFakeTelegram } from '@agent/channels/testing';
import { createFakeOpenAI, openaiText, type FakeModelServer } from '@agent/model-providers/testing';
import type { InboundOutcome, InboundSide } from './index.js';
import {
  agentYaml,
  binding,
  createTestEnv,
  gate,
  inbound,
  providerYaml,
  startRuntime,
  waitFor,
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
