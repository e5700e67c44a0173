// The snapshot-swap guarantee: a turn finishes on the snapshot it captured (prompt, key, tools,
// allowlist), and the next turn uses the newest one.
import { afterEach, describe, expect, it } from 'vitest';
import {
  createFakeOpenAI,
  openaiCompletion,
  openaiText,
  type FakeModelServer,
} from '@agent/model-providers/testing';
import type { ToolDefinition } from './index.js';
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
} from '../test/helpers.js';

type Body = Record<string, unknown>;
type OpenAIMsg = { role: string; content: unknown };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

function systemOf(body: unknown): unknown {
  return ((body as Body).messages as OpenAIMsg[])[0];
}
function toolNames(body: unknown): string[] {
  return (((body as Body).tools ?? []) as { function: { name: string } }[])
    .map((t) => t.function.name)
    .sort();
}
function lastToolResult(body: unknown): unknown {
  return ((body as Body).messages as OpenAIMsg[]).findLast((m) => m.role === 'tool')?.content;
}

function sendToAlice(id: string) {
  return openaiCompletion({
    toolCalls: [
      { id, name: 'send_message', arguments: { channel: 'log', to: 'alice', text: `hi alice ${id}` } },
    ],
  });
}

describe('snapshot swap during a turn', () => {
  it('keeps the in-flight turn on its old snapshot and moves the next turn to the new one', async () => {
    const fake: FakeModelServer = await createFakeOpenAI();
    cleanups.push(() => fake.close());
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-old-0001')}`);
    env.write(
      'agents.d/a.yaml',
      agentYaml({
        systemPrompt: 'old prompt',
        bindings: binding({
          allowedTools: ['send_message', 'lookup'],
          allowlist: { log: ['alice'] },
          extra: 'old extra',
        }),
      }),
    );
    const h = await startRuntime(env);
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    const lookup: ToolDefinition = {
      name: 'lookup',
      description: 'Looks a word up.',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
      handler: async () => 'found',
    };
    h.runtime.registerTools(() => [lookup]);

    const slow = gate();
    let n = 0;
    fake.setHandler(async () => {
      n += 1;
      if (n === 1) {
        await slow.promise; // the slow first call of turn 1
        return sendToAlice('t1');
      }
      if (n === 2) return openaiText('old done');
      if (n === 3) return sendToAlice('t2');
      return openaiText('new done');
    });

    await h.runtime.handleInbound(inbound('turn one'));
    await fake.waitForRequests(1);

    // Reload while turn 1 waits on the model: new key, prompt, extra, allowed_tools and allowlist.
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-new-0002')}`);
    env.write(
      'agents.d/a.yaml',
      agentYaml({
        systemPrompt: 'new prompt',
        bindings: binding({
          allowedTools: ['send_message'],
          allowlist: { log: ['bob'] },
          extra: 'new extra',
        }),
      }),
    );
    h.store.swap(env.load(h.store.current()));
    expect(h.store.current().version).toBe(2);
    // The old clients stay alive: turn 1 still holds snapshot v1.
    expect(h.runtime.modelClientVersions()).toEqual([1, 2]);

    slow.open();
    await waitFor(() => deliveries(env).length === 2, 'turn 1 replies');
    await h.runtime.whenIdle();

    // Turn 1, both calls: old key, old prompt and extra, old tools; old allowlist let alice through.
    const [r1, r2] = fake.requests;
    expect(r1!.headers.authorization).toBe('Bearer key-old-0001');
    expect(r2!.headers.authorization).toBe('Bearer key-old-0001');
    expect(systemOf(r2!.body)).toEqual({ role: 'system', content: 'old prompt\n\nold extra' });
    expect(toolNames(r2!.body)).toEqual(['lookup', 'send_message']);
    expect(String(lastToolResult(r2!.body))).toContain('"sent":true');
    expect(deliveries(env).map((d) => [d.to, d.text])).toEqual([
      ['alice', 'hi alice t1'],
      ['chat-1', 'old done'],
    ]);
    expect(h.logger.find('tool_call rejected')).toHaveLength(0);
    // Turn 1 ended: the v1 clients are retired.
    expect(h.runtime.modelClientVersions()).toEqual([2]);
    expect(h.logger.find('model client retired').length).toBeGreaterThanOrEqual(1);

    await h.runtime.handleInbound(inbound('turn two'));
    await h.runtime.whenIdle();

    // Turn 2: new key, prompt, tools, allowlist.
    const [, , r3, r4] = fake.requests;
    expect(r3!.headers.authorization).toBe('Bearer key-new-0002');
    expect(r4!.headers.authorization).toBe('Bearer key-new-0002');
    expect(systemOf(r3!.body)).toEqual({ role: 'system', content: 'new prompt\n\nnew extra' });
    expect(toolNames(r3!.body)).toEqual(['send_message']);
    const reason = `recipient "alice" is not in this agent's outbound allowlist for channel "log"`;
    expect(lastToolResult(r4!.body)).toBe(`Error: send_message rejected: ${reason}`);
    expect(h.logger.find('tool_call rejected').map((r) => r.fields)).toEqual([
      { agent_id: 'a', channel: 'log', recipient: 'alice', reason },
    ]);
    expect(deliveries(env).map((d) => [d.to, d.text])).toEqual([
      ['alice', 'hi alice t1'],
      ['chat-1', 'old done'],
      ['chat-1', 'new done'],
    ]);
    expect(h.logger.find('inbound matched binding').map((r) => r.fields.snapshot_version)).toEqual([1, 2]);
  });

  it('a queued message captures the snapshot current when its turn starts, not when it arrived', async () => {
    const fake = await createFakeOpenAI();
    cleanups.push(() => fake.close());
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-old-0001')}`);
    env.write('agents.d/a.yaml', agentYaml({ systemPrompt: 'old prompt' }));
    const h = await startRuntime(env);
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    const slow = gate();
    let n = 0;
    fake.setHandler(async () => {
      n += 1;
      if (n === 1) await slow.promise;
      return openaiText(`reply ${n}`);
    });
    await h.runtime.handleInbound(inbound('first'));
    await fake.waitForRequests(1);
    await h.runtime.handleInbound(inbound('second')); // queued behind the first, routed on v1
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', fake.baseUrl, 'key-new-0002')}`);
    env.write('agents.d/a.yaml', agentYaml({ systemPrompt: 'new prompt' }));
    h.store.swap(env.load(h.store.current()));
    slow.open();
    await h.runtime.whenIdle();
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual([
      'Bearer key-old-0001',
      'Bearer key-new-0002',
    ]);
    expect(systemOf(fake.requests[1]!.body)).toEqual({ role: 'system', content: 'new prompt' });
  });
  it('a new provider entry (other base URL and key) reaches only turns that start after the swap', async () => {
    const oldFake = await createFakeOpenAI();
    const newFake = await createFakeOpenAI();
    cleanups.push(
      () => oldFake.close(),
      () => newFake.close(),
    );
    const env = createTestEnv();
    cleanups.push(() => env.cleanup());
    env.write('llm.yaml', `providers:\n${providerYaml('main', 'openai', oldFake.baseUrl, 'key-old-0001')}`);
    env.write(
      'agents.d/a.yaml',
      agentYaml({ provider: 'main', bindings: binding({ allowlist: { log: ['alice'] } }) }),
    );
    const h = await startRuntime(env);
    cleanups.push(async () => {
      await h.runtime.stop({ graceMs: 0 });
    });
    const slow = gate();
    let n = 0;
    oldFake.setHandler(async () => {
      n += 1;
      if (n === 1) {
        await slow.promise;
        return sendToAlice('t1');
      }
      return openaiText('old provider done');
    });
    newFake.setHandler(() => openaiText('new provider done'));

    await h.runtime.handleInbound(inbound('one'));
    await oldFake.waitForRequests(1);
    env.write(
      'llm.yaml',
      `providers:\n${providerYaml('main', 'openai', oldFake.baseUrl, 'key-old-0001')}${providerYaml('alt', 'openai', newFake.baseUrl, 'key-alt-0003')}`,
    );
    env.write(
      'agents.d/a.yaml',
      agentYaml({ provider: 'alt', bindings: binding({ allowlist: { log: ['alice'] } }) }),
    );
    h.store.swap(env.load(h.store.current()));
    slow.open();
    await h.runtime.whenIdle();
    await h.runtime.handleInbound(inbound('two'));
    await h.runtime.whenIdle();

    expect(oldFake.requests.map((r) => r.headers.authorization)).toEqual([
      'Bearer key-old-0001',
      'Bearer key-old-0001',
    ]);
    expect(newFake.requests.map((r) => r.headers.authorization)).toEqual(['Bearer key-alt-0003']);
    expect(deliveries(env).map((d) => d.text)).toEqual([
      'hi alice t1',
      'old provider done',
      'new provider done',
    ]);
  });
});
