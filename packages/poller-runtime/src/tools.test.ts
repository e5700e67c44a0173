import { describe, expect, it } from 'vitest';
import { harnessPerTest, job, scriptedKind } from '../test/helpers.js';
import { type TickContext } from '@agent/poller-core';
import { createTestSnapshot } from './testing.js';

const setup = harnessPerTest();

describe('tools', () => {
  it('offers the six pollers_* tools: every job is visible, only own jobs change; each call is logged', async () => {
    const h = setup({
      agents: { assistant: { channels: ['chat_a', 'chat_b'] }, other: { channels: ['chat_a'] } },
      jobs: [job('j1'), job('j2', { agent: 'other' })],
    });
    await h.service.start();
    await h.clock.advance(0);
    const tools = h.service.tools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'pollers_list',
      'pollers_pause',
      'pollers_reset',
      'pollers_resume',
      'pollers_run',
      'pollers_show',
    ]);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const ctx = { agentId: 'assistant', logger: h.logger, signal: new AbortController().signal };
    const list = (await byName.pollers_list!.handler({}, ctx)) as { id: string }[];
    expect(list.map((j) => j.id)).toEqual(['j1', 'j2']);
    await expect(byName.pollers_show!.handler({ id: 'j2' }, ctx)).resolves.toMatchObject({ id: 'j2' });
    await expect(byName.pollers_show!.handler({ id: 'nope' }, ctx)).rejects.toMatchObject({
      code: 'POLLER_UNKNOWN_JOB',
    });
    await expect(byName.pollers_pause!.handler({ id: 'j2' }, ctx)).rejects.toMatchObject({
      code: 'POLLER_UNKNOWN_JOB',
    });
    expect((await byName.pollers_show!.handler({ id: 'j2' }, ctx)) as { paused: boolean }).toMatchObject({
      paused: false,
    });
    await expect(byName.pollers_reset!.handler({ id: 'j1' }, ctx)).rejects.toMatchObject({
      code: 'POLLER_CONFIRM_REQUIRED',
    });
    await expect(byName.pollers_reset!.handler({ id: 'j1', confirm: true }, ctx)).resolves.toMatchObject({
      id: 'j1',
    });
    expect(
      h.logger.records.some(
        (r) => r.msg === 'poller tool call' && r.fields.agent_id === 'assistant' && r.fields.job_id === 'j1',
      ),
    ).toBe(true);
  });

  it('binds kind tools to the calling agent shared resource; one shared per (agent, kind), rebuilt on credentials reload', async () => {
    let created = 0;
    let closed = 0;
    const k = scriptedKind('fake', {
      credentials: 'mail',
      createShared: ({ agentId, account }) => ({
        agentId,
        account: account?.name,
        n: ++created,
        close: () => void closed++,
      }),
      tools: [
        {
          name: 'fake_whoami',
          description: 'who',
          parameters: { type: 'object' },
          handler: async (_a, ctx) => ctx.shared,
        },
      ],
    });
    k.setDefault(async (ctx: TickContext) => ({ items: [], cursor: (ctx.shared as { n: number }).n }));
    const h = setup({
      kinds: [k],
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { client_id: 'x' } } },
      jobs: [job('j1'), job('j2')],
    });
    await h.service.start();
    await h.clock.advance(0);
    expect(created).toBe(1);
    const tool = h.service.tools().find((t) => t.name === 'fake_whoami')!;
    const ctx = { agentId: 'assistant', logger: h.logger, signal: new AbortController().signal };
    expect(await tool.handler({}, ctx)).toMatchObject({ agentId: 'assistant', account: 'work', n: 1 });
    await h.service.reloadCredentials(h.snapshot);
    expect(closed).toBe(1);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 2 });
    await expect(tool.handler({}, { ...ctx, agentId: 'nobody' })).rejects.toMatchObject({
      code: 'POLLER_NO_CREDENTIALS',
    });
    // A config reload that leaves the account alone keeps the client; a rotated secret rebuilds it.
    const same = createTestSnapshot({
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { client_id: 'x' } } },
      jobs: [job('j1'), job('j2')],
      version: 2,
    });
    await h.service.reload(same);
    expect(closed).toBe(1);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 2 });
    const rotated = createTestSnapshot({
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { client_id: 'x', refresh_token: 'rotated' } } },
      jobs: [job('j1'), job('j2')],
      version: 3,
    });
    await h.service.reload(rotated);
    expect(closed).toBe(2);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 3 });
    // The last job of the (agent, kind) removed: its resource is closed at the reload, not left open; the
    // tool builds one again when it is called.
    const removedOptions = {
      agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { client_id: 'x', refresh_token: 'rotated' } } },
      jobs: [],
    };
    const removed = createTestSnapshot({ ...removedOptions, version: 4 });
    await h.service.reload(removed);
    expect(closed).toBe(3);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 4 });
    // Only the tool uses it now: another reload keeps it.
    await h.service.reload(createTestSnapshot({ ...removedOptions, version: 5 }));
    expect(closed).toBe(3);
    expect(await tool.handler({}, ctx)).toMatchObject({ n: 4 });
  });

  it('the resource of a removed last job is closed once its in-flight tick ended, not under it', async () => {
    let closed = 0;
    let closedDuringTick: number | undefined;
    const k = scriptedKind('fake', {
      credentials: 'mail',
      createShared: () => ({ close: () => void closed++ }),
    });
    k.push({ items: [] });
    k.push(
      (ctx: TickContext) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            closedDuringTick = closed;
            resolve({ items: [] });
          });
        }),
    );
    const agents = { assistant: { channels: ['chat_a'], credentials: { mail: 'work' } } };
    const accounts = { mail: { work: { client_id: 'x' } } };
    const h = setup({ kinds: [k], agents, accounts, jobs: [job('j1')] });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(60_000);
    expect(k.calls).toHaveLength(2);
    await h.service.reload(createTestSnapshot({ agents, accounts, jobs: [], version: 2 }));
    expect(closedDuringTick).toBe(0);
    expect(closed).toBe(1);
  });
});
