import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryLogger, type Logger } from '@agent/log';
import { createFakeOpenAI, openaiCompletion, openaiText } from '@agent/model-providers/testing';
import { isRecipientAllowed, isToolAllowed, MAX_TOOL_RESULT_CHARS, type ToolDefinition } from './index.js';
import { collectTools, runToolCall, type ToolContext } from './tools.js';
import { agentYaml, binding, createTestEnv, inbound, providerYaml, startRuntime } from '../test/helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

function snapshotCtx(logger: Logger): ToolContext {
  const env = createTestEnv();
  cleanups.push(() => env.cleanup());
  // A `${file:}` secret: the snapshot redacts those values.
  writeFileSync(join(env.root, 'key.txt'), 'sk-secret-value-42', { mode: 0o600 });
  env.write(
    'llm.yaml',
    `providers:\n${providerYaml('main', 'openai', 'http://127.0.0.1:9/v1', '${file:key.txt}')}`,
  );
  env.write('agents.d/a.yaml', agentYaml());
  return {
    agentId: 'a',
    bindingIndex: 0,
    snapshot: env.load(),
    logger,
    signal: new AbortController().signal,
  };
}

const echo: ToolDefinition = {
  name: 'echo',
  description: 'Echoes.',
  parameters: {
    type: 'object',
    properties: { text: { type: 'string' }, times: { type: 'integer', default: 1 } },
    required: ['text'],
  },
  handler: async (args) => args,
};

describe('allowed_tools and allowlist rules', () => {
  it('"*" allows everything; otherwise exact names', () => {
    expect(isToolAllowed(['*'], 'anything')).toBe(true);
    expect(isToolAllowed(['a', 'b'], 'b')).toBe(true);
    expect(isToolAllowed(['a'], 'A')).toBe(false);
    expect(isToolAllowed([], 'a')).toBe(false);
  });

  it('compares recipients exactly after trimming both sides', () => {
    expect(isRecipientAllowed([' +15550001 '], '+15550001')).toBe(true);
    expect(isRecipientAllowed(['+15550001'], ' +15550001\n')).toBe(true);
    expect(isRecipientAllowed(['+15550001'], '15550001')).toBe(false);
    expect(isRecipientAllowed(['Alice'], 'alice')).toBe(false);
    expect(isRecipientAllowed(undefined, 'alice')).toBe(false);
  });
});

describe('collectTools', () => {
  it('keeps the first tool of a name, skips a failing provider, and filters by allowed_tools', () => {
    const logger = createMemoryLogger();
    const set = collectTools(
      'a',
      [echo],
      [
        () => [
          { ...echo, description: 'second echo' },
          { ...echo, name: 'other' },
        ],
        () => {
          throw new Error('provider broke');
        },
      ],
      ['echo'],
      logger,
    );
    expect([...set.all.keys()]).toEqual(['echo', 'other']);
    expect(set.all.get('echo')!.description).toBe('Echoes.');
    expect(set.schemas.map((s) => s.name)).toEqual(['echo']);
    expect(logger.find('tool name taken')).toHaveLength(1);
    expect(logger.find('tool provider failed')[0]!.fields.error).toBe('provider broke');
  });

  it('accepts tools whose handler takes only {agentId, logger, signal}', () => {
    // The shape the poller subsystem registers.
    interface NarrowContext {
      agentId: string;
      logger: Logger;
      signal: AbortSignal;
    }
    const narrow = {
      name: 'pollers_list',
      description: 'List jobs.',
      parameters: { type: 'object' } as Readonly<Record<string, unknown>>,
      handler: async (_args: Record<string, unknown>, ctx: NarrowContext) => ctx.agentId,
    };
    const asDefinition: ToolDefinition = narrow;
    expect(collectTools('a', [], [() => [asDefinition]], ['*'], createMemoryLogger()).schemas).toHaveLength(
      1,
    );
  });
});

describe('runToolCall', () => {
  it('fills schema defaults before the handler runs', async () => {
    const ctx = snapshotCtx(createMemoryLogger());
    const set = collectTools('a', [echo], [], ['*'], ctx.logger);
    const out = await runToolCall({ id: '1', name: 'echo', arguments: { text: 'x' } }, set, ctx);
    expect(out).toEqual({ status: 'ok', isError: false, content: '{"text":"x","times":1}' });
  });

  it('refuses non-object arguments', async () => {
    const ctx = snapshotCtx(createMemoryLogger());
    const set = collectTools('a', [echo], [], ['*'], ctx.logger);
    const out = await runToolCall({ id: '1', name: 'echo', arguments: ['x'] }, set, ctx);
    expect(out).toMatchObject({ status: 'bad_arguments', isError: true });
    expect(out.content).toBe('arguments of echo must be a JSON object');
  });

  it('redacts secrets of the snapshot from results and truncates long ones', async () => {
    const ctx = snapshotCtx(createMemoryLogger());
    const leaky: ToolDefinition = {
      ...echo,
      name: 'leaky',
      handler: async () => 'key is sk-secret-value-42',
    };
    const big: ToolDefinition = {
      ...echo,
      name: 'big',
      handler: async () => 'y'.repeat(MAX_TOOL_RESULT_CHARS + 10),
    };
    const set = collectTools('a', [leaky, big], [], ['*'], ctx.logger);
    const a = await runToolCall({ id: '1', name: 'leaky', arguments: { text: '' } }, set, ctx);
    expect(a.content).toBe('key is [redacted]');
    const b = await runToolCall({ id: '2', name: 'big', arguments: { text: '' } }, set, ctx);
    expect(b.content).toHaveLength(MAX_TOOL_RESULT_CHARS + '…[truncated]'.length);
  });

  it('refuses a tool with an invalid parameter schema', async () => {
    const ctx = snapshotCtx(createMemoryLogger());
    const broken: ToolDefinition = { ...echo, name: 'broken', parameters: { type: 'no-such-type' } };
    const set = collectTools('a', [broken], [], ['*'], ctx.logger);
    const out = await runToolCall({ id: '1', name: 'broken', arguments: {} }, set, ctx);
    expect(out).toMatchObject({ status: 'bad_arguments', isError: true });
    expect(out.content).toContain('invalid parameter schema');
  });
});

describe('registered tools in turns', () => {
  it('stops offering a tool once its provider is removed; skills join the system prompt', async () => {
    const fake = await createFakeOpenAI();
    cleanups.push(() => fake.close());
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-main-1')}`);
    env.write('agents.d/a.yaml', agentYaml({ systemPrompt: 'base', bindings: binding({ extra: 'extra' }) }));
    const skillsDir = `${env.dataDir}/agents/a/skills`;
    env.write('../data/agents/a/skills/weather.md', 'Use the weather tool.\n');
    env.write('../data/agents/a/skills/notes.txt', 'ignored');
    const h = await startRuntime(env);
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    expect(h.store.current().agents.get('a')!.skillsDir).toBe(skillsDir);
    const remove = h.runtime.registerTools(() => [echo]);
    fake.reply(
      openaiCompletion({ toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }),
      openaiText('a'),
    );
    await h.runtime.handleInbound(inbound('one'));
    await h.runtime.whenIdle();
    remove();
    fake.reply(openaiText('b'));
    await h.runtime.handleInbound(inbound('two'));
    await h.runtime.whenIdle();
    const names = (i: number) =>
      ((fake.requests[i]!.body as { tools?: { function: { name: string } }[] }).tools ?? []).map(
        (t) => t.function.name,
      );
    expect(names(0).sort()).toEqual(['echo', 'send_message']);
    expect(names(2)).toEqual(['send_message']);
    const system = (fake.requests[0]!.body as { messages: { content: string }[] }).messages[0]!.content;
    expect(system).toBe('base\n\nextra\n\n## Skills\n\n### weather\n\nUse the weather tool.');
  });
});
