import { afterEach, describe, expect, it } from 'vitest';
import {
  anthropicMessage,
  anthropicText,
  createFakeAnthropic,
  createFakeOpenAI,
  openaiCompletion,
  openaiError,
  openaiText,
  type FakeModelServer,
} from '@agent/model-providers/testing';
import { APOLOGY_TEXT, TOOL_ROUNDS_EXHAUSTED_TEXT, type ToolDefinition } from './index.js';
import {
  agentYaml,
  binding,
  createTestEnv,
  deliveries,
  inbound,
  providerYaml,
  startRuntime,
  type Harness,
  type TestEnv,
} from '../test/helpers.js';

type Body = Record<string, unknown>;

const lookupCall = (id: string) =>
  openaiCompletion({ toolCalls: [{ id, name: 'lookup', arguments: { q: id } }] });
type OpenAIMsg = { role: string; content: unknown; tool_call_id?: string };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

async function setup(opts: {
  type?: 'openai' | 'anthropic';
  bindings?: string;
  maxToolRounds?: number;
}): Promise<{ env: TestEnv; fake: FakeModelServer; h: Harness; lookupCalls: Record<string, unknown>[] }> {
  const type = opts.type ?? 'openai';
  const fake = type === 'openai' ? await createFakeOpenAI() : await createFakeAnthropic();
  cleanups.push(() => fake.close());
  const env = createTestEnv();
  cleanups.push(() => env.cleanup());
  env.write('llm.yaml', `providers:\n${providerYaml('main', type, fake.baseUrl, 'key-main-1')}`);
  env.write(
    'agents.d/a.yaml',
    agentYaml({
      bindings: opts.bindings ?? binding({ allowlist: { log: ['alice'] } }),
      maxToolRounds: opts.maxToolRounds,
    }),
  );
  const h = await startRuntime(env);
  cleanups.push(async () => {
    await h.runtime.stop({ graceMs: 0 });
  });
  const lookupCalls: Record<string, unknown>[] = [];
  const lookup: ToolDefinition = {
    name: 'lookup',
    description: 'Looks a word up.',
    parameters: {
      type: 'object',
      additionalProperties: false,
      required: ['q'],
      properties: { q: { type: 'string' } },
    },
    async handler(args, ctx) {
      lookupCalls.push({ ...args, agentId: ctx.agentId, bindingIndex: ctx.bindingIndex });
      return { meaning: `meaning of ${String(args.q)}` };
    },
  };
  h.runtime.registerTools(() => [lookup]);
  return { env, fake, h, lookupCalls };
}

function toolNames(body: Body): string[] {
  const tools = (body.tools ?? []) as { name?: string; function?: { name: string } }[];
  return tools.map((t) => t.function?.name ?? t.name ?? '').sort();
}

describe('turns with tool calls', () => {
  it('runs a tool and replies on the OpenAI-compatible API', async () => {
    const { env, fake, h, lookupCalls } = await setup({});
    fake.reply(
      openaiCompletion({ toolCalls: [{ id: 'c1', name: 'lookup', arguments: { q: 'ostrich' } }] }),
      openaiText('An ostrich is a bird.'),
    );
    await h.runtime.handleInbound(inbound('what is an ostrich?'));
    await h.runtime.whenIdle();

    expect(lookupCalls).toEqual([{ q: 'ostrich', agentId: 'a', bindingIndex: 0 }]);
    expect(fake.requests).toHaveLength(2);
    const first = fake.requests[0]!.body as Body;
    expect(toolNames(first)).toEqual(['lookup', 'send_message']);
    expect((first.messages as OpenAIMsg[])[0]).toEqual({ role: 'system', content: 'You are a test agent.' });
    const second = (fake.requests[1]!.body as Body).messages as OpenAIMsg[];
    const toolMsg = second.find((m) => m.role === 'tool');
    expect(toolMsg).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: '{"meaning":"meaning of ostrich"}',
    });
    expect(deliveries(env).map((d) => [d.to, d.text])).toEqual([['chat-1', 'An ostrich is a bird.']]);
  });

  it('runs send_message and replies on the Anthropic API', async () => {
    const { env, fake, h } = await setup({ type: 'anthropic' });
    fake.reply(
      anthropicMessage({
        text: 'Sending.',
        toolUses: [
          { id: 'tu1', name: 'send_message', input: { channel: 'log', to: ' alice ', text: 'hi alice' } },
        ],
      }),
      anthropicText('Told alice.'),
    );
    await h.runtime.handleInbound(inbound('tell alice hi'));
    await h.runtime.whenIdle();

    expect(fake.requests).toHaveLength(2);
    const first = fake.requests[0]!.body as Body;
    expect(first.system).toBe('You are a test agent.');
    expect(toolNames(first)).toEqual(['lookup', 'send_message']);
    expect(fake.requests[0]!.headers['x-api-key']).toBe('key-main-1');
    const msgs = (fake.requests[1]!.body as Body).messages as { role: string; content: Body[] }[];
    const result = msgs.at(-1)!.content.find((b) => b.type === 'tool_result')!;
    expect(result.tool_use_id).toBe('tu1');
    expect(result.is_error).toBeUndefined();
    expect(String(result.content)).toContain('"sent":true');
    expect(deliveries(env).map((d) => [d.to, d.text])).toEqual([
      ['alice', 'hi alice'],
      ['chat-1', 'Told alice.'],
    ]);
  });
});

describe('send_message allowlist', () => {
  it('rejects a recipient outside the allowlist, logs it and tells the model why', async () => {
    const { env, fake, h } = await setup({});
    fake.reply(
      openaiCompletion({
        toolCalls: [
          { id: 'c1', name: 'send_message', arguments: { channel: 'log', to: 'mallory', text: 'psst' } },
        ],
      }),
      openaiText('I could not reach mallory.'),
    );
    await h.runtime.handleInbound(inbound('tell mallory'));
    await h.runtime.whenIdle();

    const rejected = h.logger.find('tool_call rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.level).toBe('error');
    const reason = `recipient "mallory" is not in this agent's outbound allowlist for channel "log"`;
    expect(rejected[0]!.fields).toEqual({ agent_id: 'a', channel: 'log', recipient: 'mallory', reason });
    const toolMsg = ((fake.requests[1]!.body as Body).messages as OpenAIMsg[]).find((m) => m.role === 'tool');
    expect(toolMsg?.content).toBe(`Error: send_message rejected: ${reason}`);
    expect(deliveries(env).map((d) => d.to)).toEqual(['chat-1']);
  });

  it('rejects a channel the allowlist does not name, even for a listed recipient', async () => {
    const { env, fake, h } = await setup({});
    fake.reply(
      openaiCompletion({
        toolCalls: [
          { id: 'c1', name: 'send_message', arguments: { channel: 'chat_b', to: 'alice', text: 'x' } },
        ],
      }),
      openaiText('done'),
    );
    await h.runtime.handleInbound(inbound('go'));
    await h.runtime.whenIdle();
    expect(h.logger.find('tool_call rejected')[0]!.fields.channel).toBe('chat_b');
    expect(deliveries(env).map((d) => d.to)).toEqual(['chat-1']);
  });
});

describe('allowed_tools', () => {
  it('shows the model only allowed tools and refuses a call to a hidden one', async () => {
    const { env, fake, h, lookupCalls } = await setup({
      bindings: binding({ allowedTools: ['lookup'], allowlist: { log: ['alice'] } }),
    });
    fake.reply(
      openaiCompletion({
        toolCalls: [
          { id: 'c1', name: 'send_message', arguments: { channel: 'log', to: 'alice', text: 'hi' } },
        ],
      }),
      openaiText('ok'),
    );
    await h.runtime.handleInbound(inbound('hi'));
    await h.runtime.whenIdle();

    expect(toolNames(fake.requests[0]!.body as Body)).toEqual(['lookup']);
    const toolMsg = ((fake.requests[1]!.body as Body).messages as OpenAIMsg[]).find((m) => m.role === 'tool');
    expect(toolMsg?.content).toBe(
      'Error: tool send_message is not available here; use only the tools you were given',
    );
    expect(h.logger.find('tool_call refused')[0]!.fields).toMatchObject({
      agent_id: 'a',
      tool: 'send_message',
    });
    expect(deliveries(env).map((d) => d.to)).toEqual(['chat-1']);
    expect(lookupCalls).toEqual([]);
  });

  it('sends no tools when allowed_tools is empty', async () => {
    const { fake, h } = await setup({ bindings: binding({ allowedTools: [] }) });
    fake.reply(openaiText('plain'));
    await h.runtime.handleInbound(inbound('hi'));
    await h.runtime.whenIdle();
    expect((fake.requests[0]!.body as Body).tools).toBeUndefined();
  });
});

describe('bad tool arguments', () => {
  it('answers schema violations and unparseable JSON with error results, never running the handler', async () => {
    const { fake, h, lookupCalls } = await setup({});
    fake.reply(
      openaiCompletion({
        toolCalls: [
          { id: 'c1', name: 'lookup', arguments: { q: 5 } },
          { id: 'c2', name: 'lookup', arguments: '{"q": ' },
        ],
      }),
      openaiText('sorry'),
    );
    await h.runtime.handleInbound(inbound('hi'));
    await h.runtime.whenIdle();
    expect(lookupCalls).toEqual([]);
    const tools = ((fake.requests[1]!.body as Body).messages as OpenAIMsg[]).filter((m) => m.role === 'tool');
    expect(tools.map((t) => t.tool_call_id)).toEqual(['c1', 'c2']);
    expect(String(tools[0]!.content)).toBe('Error: invalid arguments for lookup: /q must be string');
    expect(String(tools[1]!.content)).toMatch(/^Error: .*JSON/i);
  });
});

describe('limits and failures', () => {
  it('stops after max_tool_rounds model calls and says so', async () => {
    const { env, fake, h, lookupCalls } = await setup({ maxToolRounds: 2 });
    fake.reply(lookupCall('c1'), lookupCall('c2'), lookupCall('c3'));
    await h.runtime.handleInbound(inbound('loop'));
    await h.runtime.whenIdle();
    expect(fake.requests).toHaveLength(2);
    expect(lookupCalls.map((c) => c.q)).toEqual(['c1']);
    expect(deliveries(env).map((d) => d.text)).toEqual([TOOL_ROUNDS_EXHAUSTED_TEXT]);
    expect(h.logger.find('turn tool rounds exhausted')).toHaveLength(1);
  });

  it('logs a model error with its code, apologises in the chat, and keeps serving', async () => {
    const { env, fake, h } = await setup({});
    fake.reply(openaiError(401, 'Incorrect API key provided: key-main-1'), openaiText('back again'));
    await h.runtime.handleInbound(inbound('first'));
    await h.runtime.whenIdle();
    const failed = h.logger.find('turn failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.level).toBe('error');
    expect(failed[0]!.fields).toMatchObject({ agent_id: 'a', binding_index: 0, code: 'MODEL_AUTH' });
    expect(h.logger.lines.join('\n')).not.toContain('key-main-1');
    await h.runtime.handleInbound(inbound('second'));
    await h.runtime.whenIdle();
    expect(deliveries(env).map((d) => d.text)).toEqual([APOLOGY_TEXT, 'back again']);
  });

  it('turns a throwing tool into an error result', async () => {
    const { fake, h } = await setup({});
    h.runtime.registerTools(() => [
      {
        name: 'explode',
        description: 'Always fails.',
        parameters: { type: 'object' },
        handler: async () => {
          throw new Error('boom');
        },
      },
    ]);
    fake.reply(
      openaiCompletion({ toolCalls: [{ id: 'c1', name: 'explode', arguments: {} }] }),
      openaiText('ok'),
    );
    await h.runtime.handleInbound(inbound('hi'));
    await h.runtime.whenIdle();
    const toolMsg = ((fake.requests[1]!.body as Body).messages as OpenAIMsg[]).find((m) => m.role === 'tool');
    expect(toolMsg?.content).toBe('Error: tool explode failed: boom');
  });
});
