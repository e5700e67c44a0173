// Agents end to end on real daemon processes: a Telegram-protocol channel and an OpenAI-compatible model,
// both replaced by loopback fakes written from the vendors' public API docs.
import { createFakeTelegram, type FakeTelegram } from '@agent/channels/testing';
import {
  createFakeOpenAI,
  openaiCompletion,
  openaiText,
  type FakeModelServer,
} from '@agent/model-providers/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDaemon, workdir, type DaemonProcess, type Workdir } from './harness.js';

const TOKEN = '123456:bot-token-abcdef';

let tg: FakeTelegram;
let llm: FakeModelServer;
let w: Workdir;
const daemons: DaemonProcess[] = [];

beforeEach(async () => {
  tg = await createFakeTelegram({ token: TOKEN });
  llm = await createFakeOpenAI();
  w = workdir({
    'llm.yaml': `providers:\n  main:\n    type: openai\n    base_url: ${llm.baseUrl}\n    api_key: \${file:secrets/llm.key}\n    max_retries: 0\n`,
    'plugins/chat_b.yaml': `instances:\n  main:\n    base_url: ${tg.baseUrl}\n    bot_token: "${TOKEN}"\n    poll_timeout_secs: 1\n`,
    'runtime.yaml':
      'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  debounce_ms: 100\n',
    'agents.d/a.yaml':
      'model:\n  provider: main\n  name: m1\nsystem_prompt: You are A.\ninbound_bindings:\n  - plugin: chat_b\n    instance: main\n    allowed_tools: [send_message]\n    outbound_allowlist:\n      chat_b: ["42"]\n',
  });
  w.write('../secrets/llm.key', 'key-old-1111\n', 0o600);
});

afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop('SIGKILL');
  await tg.close();
  await llm.close();
  w.cleanup();
});

async function boot(): Promise<DaemonProcess> {
  const d = await startDaemon(w);
  daemons.push(d);
  return d;
}

const waitUntil = async (cond: () => boolean, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe('agents through a real daemon', () => {
  it('routes, runs a turn, replies, and never handles a message twice across a restart', async () => {
    llm.setHandler(() => openaiText('hi there'));
    const d1 = await boot();
    const first = tg.enqueueText({ chatId: 42, text: 'hello' });
    await waitUntil(() => tg.sends.length === 1);
    expect(tg.sends[0]).toMatchObject({ chatId: '42', text: 'hi there' });
    await d1.waitFor(
      /level=info msg="inbound matched binding" .*agent_id=a plugin=chat_b binding_index=0 snapshot_version=1/,
    );
    const body = llm.requests[0]!.body as { messages: { role: string; content: string }[] };
    expect(body.messages[0]).toEqual({ role: 'system', content: 'You are A.' });
    expect(await d1.stop('SIGTERM')).toBe(0);

    const d2 = await boot();
    await waitUntil(() => tg.getUpdatesOffsets.length > 0 && tg.getUpdatesOffsets.at(-1) === first + 1);
    tg.enqueueText({ chatId: 42, text: 'again' });
    await waitUntil(() => tg.sends.length === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(llm.requests).toHaveLength(2);
    expect(tg.sends).toHaveLength(2);
    expect(d2.count(/inbound matched binding/)).toBe(1);
  });

  it('a key rotated through ${file:} reaches the next turn; the turn in flight keeps the old key', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    llm.setHandler(async () => {
      calls++;
      if (calls === 1) {
        await gate;
        return openaiCompletion({
          toolCalls: [
            { name: 'send_message', arguments: { channel: 'chat_b', to: '42', text: 'from the tool' } },
          ],
        });
      }
      return openaiText(calls === 2 ? 'first turn done' : 'second turn done');
    });
    const d = await boot();
    tg.enqueueText({ chatId: 42, text: 'one' });
    await llm.waitForRequests(1);
    w.write('../secrets/llm.key', 'key-new-2222\n', 0o600);
    await d.waitFor(/msg="config reload applied" version=2/);
    release();
    await waitUntil(() => tg.sends.some((s) => s.text === 'first turn done'));
    tg.enqueueText({ chatId: 42, text: 'two' });
    await waitUntil(() => tg.sends.some((s) => s.text === 'second turn done'));
    const auth = llm.requests.map((r) => r.headers.authorization);
    expect(auth).toEqual(['Bearer key-old-1111', 'Bearer key-old-1111', 'Bearer key-new-2222']);
    expect(tg.sends.map((s) => s.text)).toEqual(['from the tool', 'first turn done', 'second turn done']);
    expect(d.lines.join('\n')).not.toContain('key-new-2222');
  });

  it('a send outside the outbound allowlist is rejected, logged, and the reason reaches the model', async () => {
    let calls = 0;
    llm.setHandler(() => {
      calls++;
      return calls === 1
        ? openaiCompletion({
            toolCalls: [{ name: 'send_message', arguments: { channel: 'chat_b', to: '99', text: 'sneaky' } }],
          })
        : openaiText('could not send');
    });
    const d = await boot();
    tg.enqueueText({ chatId: 42, text: 'send to 99' });
    await waitUntil(() => tg.sends.length === 1);
    expect(tg.sends[0]!.text).toBe('could not send');
    const line = await d.waitFor(/level=error msg="tool_call rejected"/);
    expect(line).toMatch(/recipient=99/);
    expect(line).toMatch(/channel=chat_b/);
    const second = llm.requests[1]!.body as { messages: { role: string; content: string }[] };
    const toolResult = second.messages.find((m) => m.role === 'tool')!;
    expect(toolResult.content).toContain('99');
    expect(toolResult.content).toContain('chat_b');
  });
});
