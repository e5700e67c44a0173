import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import {
  createFakeOpenAI,
  openaiCompletion,
  openaiText,
  type FakeModelServer,
} from '@agent/model-providers/testing';
import {
  agentYaml,
  binding,
  createTestEnv,
  deliveries,
  gate,
  inbound,
  providerYaml,
  startRuntime,
  waitFor,
  type Gate,
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
  agents: Record<string, string>,
  extraFiles: Record<string, string> = {},
): Promise<{ env: TestEnv; fake: FakeModelServer; h: Harness }> {
  const fake = await createFakeOpenAI();
  cleanups.push(() => fake.close());
  const env = createTestEnv();
  cleanups.push(() => env.cleanup());
  env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-main-1')}`);
  env.write(
    'plugins/log.yaml',
    `instances:\n  default:\n    file: ${env.outFile}\n  other:\n    file: ${env.outFile}.other\n`,
  );
  for (const [id, y] of Object.entries(agents)) env.write(`agents.d/${id}.yaml`, y);
  for (const [rel, y] of Object.entries(extraFiles)) env.write(rel, y);
  const h = await startRuntime(env);
  cleanups.push(async () => {
    await h.runtime.stop({ graceMs: 0 });
  });
  return { env, fake, h };
}

function lastUserText(body: unknown): unknown {
  return ((body as Body).messages as OpenAIMsg[]).findLast((m) => m.role === 'user')?.content;
}

/** Each request waits for its own gate; replies with the user text it got. */
function gatedEcho(fake: FakeModelServer): Gate[] {
  const gates: Gate[] = [];
  fake.setHandler(async (req) => {
    const g = gate();
    gates.push(g);
    await g.promise;
    return openaiText(`echo ${String(lastUserText(req.body))}`);
  });
  return gates;
}

describe('inbound routing', () => {
  it('takes the first matching binding in agent-id order, then binding order, and logs exactly the spec fields', async () => {
    const { fake, h } = await setup({
      // Both agents take log/default; agent-id order makes "a" win, binding order picks its index 1.
      b: agentYaml({ bindings: binding({}) }),
      a: agentYaml({ bindings: binding({ instance: 'other' }) + binding({}) }),
    });
    fake.setHandler(() => openaiText('ok'));
    await h.runtime.handleInbound(inbound('to other', { instance: 'other' }));
    await h.runtime.handleInbound(inbound('to default'));
    await h.runtime.whenIdle();
    const matched = h.logger.find('inbound matched binding');
    expect(matched.map((r) => r.level)).toEqual(['info', 'info']);
    expect(matched.map((r) => r.fields)).toEqual([
      { agent_id: 'a', plugin: 'log', binding_index: 0, snapshot_version: 1 },
      { agent_id: 'a', plugin: 'log', binding_index: 1, snapshot_version: 1 },
    ]);
    expect(h.logger.lines.find((l) => l.includes('inbound matched binding'))).toBe(
      'ts=1970-01-01T00:00:00.000Z level=info msg="inbound matched binding" agent_id=a plugin=log binding_index=0 snapshot_version=1',
    );
  });

  it('logs and drops a message no binding takes, without calling the model', async () => {
    const { fake, h } = await setup({ a: agentYaml({ bindings: binding({ instance: 'default' }) }) });
    await expect(
      h.runtime.handleInbound(inbound('hello?', { plugin: 'chat_b', instance: 'bot' })),
    ).resolves.toBeUndefined();
    await h.runtime.handleInbound(inbound('hello?', { instance: 'other' }));
    await h.runtime.whenIdle();
    expect(fake.requests).toHaveLength(0);
    expect(
      h.logger.find('inbound unmatched').map((r) => [r.level, r.fields.plugin, r.fields.instance]),
    ).toEqual([
      ['warn', 'chat_b', 'bot'],
      ['warn', 'log', 'other'],
    ]);
  });

  it('drops a message without text', async () => {
    const { fake, h } = await setup({ a: agentYaml() });
    await h.runtime.handleInbound(inbound('  \n '));
    await h.runtime.whenIdle();
    expect(fake.requests).toHaveLength(0);
    expect(h.logger.find('inbound empty')).toHaveLength(1);
  });

  it('drops a re-delivered message (same plugin, instance, chat and message id)', async () => {
    const { fake, h } = await setup({ a: agentYaml() });
    fake.setHandler(() => openaiText('ok'));
    const msg = inbound('once');
    await h.runtime.handleInbound(msg);
    await h.runtime.handleInbound({ ...msg });
    await h.runtime.whenIdle();
    expect(fake.requests).toHaveLength(1);
  });
});

describe('sessions', () => {
  it('runs the turns of one chat one at a time in arrival order; other chats run alongside', async () => {
    const { fake, h } = await setup({ a: agentYaml() });
    const gates = gatedEcho(fake);
    await h.runtime.handleInbound(inbound('one'));
    await h.runtime.handleInbound(inbound('two'));
    await h.runtime.handleInbound(inbound('three'));
    await h.runtime.handleInbound(inbound('elsewhere', { chatId: 'chat-2' }));
    await fake.waitForRequests(2);
    // chat-1 has one call in flight; chat-2 runs beside it.
    expect(fake.requests.map((r) => lastUserText(r.body)).sort()).toEqual(['elsewhere', 'one']);
    for (let i = 0; i < 4; i++) {
      await waitFor(() => gates.length > i, `request ${i + 1}`);
      gates[i]!.open();
    }
    await h.runtime.whenIdle();
    const chat1 = fake.requests.map((r) => lastUserText(r.body)).filter((t) => t !== 'elsewhere');
    expect(chat1).toEqual(['one', 'two', 'three']);
  });

  it('drops the oldest waiting message when the queue is full, and logs it', async () => {
    const { fake, h } = await setup({ a: agentYaml() }, { 'runtime.yaml': `sessions:\n  max_queue: 2\n` });
    const gates = gatedEcho(fake);
    const msgs = ['one', 'two', 'three', 'four', 'five'].map((t) => inbound(t));
    await h.runtime.handleInbound(msgs[0]!);
    await fake.waitForRequests(1);
    for (const m of msgs.slice(1)) await h.runtime.handleInbound(m);
    const dropped = h.logger.find('session queue full, oldest message dropped');
    expect(dropped.map((r) => [r.level, r.fields.message_id, r.fields.max_queue])).toEqual([
      ['warn', msgs[1]!.messageId, 2],
      ['warn', msgs[2]!.messageId, 2],
    ]);
    for (let i = 0; i < 3; i++) {
      await waitFor(() => gates.length > i, `request ${i + 1}`);
      gates[i]!.open();
    }
    await h.runtime.whenIdle();
    expect(fake.requests.map((r) => lastUserText(r.body))).toEqual(['one', 'four', 'five']);
  });
});

describe('send_message instance', () => {
  it("sends on the conversation's own channel through the instance the message came in on", async () => {
    const { env, fake, h } = await setup({
      a: agentYaml({ bindings: binding({ allowlist: { log: ['alice'] } }) }),
    });
    fake.reply(
      openaiCompletion({
        toolCalls: [
          { id: 'c1', name: 'send_message', arguments: { channel: 'log', to: 'alice', text: 'psst' } },
        ],
      }),
      openaiText('sent'),
    );
    await h.runtime.handleInbound(inbound('go', { instance: 'other' }));
    await h.runtime.whenIdle();
    const other = readFileSync(`${env.outFile}.other`, 'utf8');
    expect(other).toContain('"to":"alice"');
    expect(other).toContain('"text":"sent"');
    expect(deliveries(env)).toEqual([]);
  });
});

describe('system prompt', () => {
  it('adds system_prompt_extra only on its own binding', async () => {
    const { fake, h } = await setup({
      a: agentYaml({
        systemPrompt: 'base prompt',
        bindings: binding({ instance: 'default', extra: 'EXTRA-DEFAULT' }) + binding({ instance: 'other' }),
      }),
    });
    fake.setHandler(() => openaiText('ok'));
    await h.runtime.handleInbound(inbound('a', { instance: 'default' }));
    await h.runtime.handleInbound(inbound('b', { instance: 'other' }));
    await h.runtime.whenIdle();
    const systems = fake.requests.map((r) => [
      lastUserText(r.body),
      ((r.body as Body).messages as OpenAIMsg[])[0]!.content,
    ]);
    expect(systems.sort()).toEqual([
      ['a', 'base prompt\n\nEXTRA-DEFAULT'],
      ['b', 'base prompt'],
    ]);
  });
});
