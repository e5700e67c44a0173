// The poller tools as agents see them: a real daemon, a fake model that calls each tool, a fake chat.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFakeTelegram, type FakeTelegram } from '@agent/channels/testing';
import {
  createFakeOpenAI,
  openaiCompletion,
  openaiText,
  type FakeModelServer,
  type RecordedRequest,
} from '@agent/model-providers/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, workdir, type DaemonProcess, type Workdir } from './harness.js';

const TOKEN = '123456:bot-token-tools';
let tg: FakeTelegram;
let llm: FakeModelServer;
let feed: Server;
let w: Workdir;
let d: DaemonProcess;
/** Tool calls the fake model makes, by the user text of the turn. */
const script = new Map<string, { name: string; arguments: Record<string, unknown> }>();

function lastUser(req: RecordedRequest): string {
  return (req.body as { messages: { role: string; content: string }[] }).messages
    .filter((m) => m.role === 'user')
    .at(-1)!.content;
}
function toolResult(req: RecordedRequest): string | undefined {
  return (req.body as { messages: { role: string; content: string }[] }).messages.find(
    (m) => m.role === 'tool',
  )?.content;
}
function toolNames(req: RecordedRequest): string[] {
  return ((req.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name);
}

beforeAll(async () => {
  tg = await createFakeTelegram({ token: TOKEN });
  llm = await createFakeOpenAI();
  llm.setHandler((req) => {
    const result = toolResult(req);
    if (result !== undefined) return openaiText(`result: ${result.slice(0, 3000)}`);
    const call = script.get(lastUser(req));
    return call ? openaiCompletion({ toolCalls: [call] }) : openaiText('nothing to do');
  });
  feed = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/rss+xml' });
    res.end(
      '<?xml version="1.0"?><rss version="2.0"><channel><title>F</title><item><guid>a</guid><title>A</title></item></channel></rss>',
    );
  });
  await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
  w = workdir({
    'llm.yaml': `providers:\n  main:\n    type: openai\n    base_url: ${llm.baseUrl}\n    api_key: key-1234\n    max_retries: 0\n`,
    'plugins/chat_b.yaml': `instances:\n  main:\n    base_url: ${tg.baseUrl}\n    bot_token: "${TOKEN}"\n    poll_timeout_secs: 1\n`,
    'runtime.yaml': 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n',
    'agents.d/a.yaml':
      'model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: chat_b\n    instance: main\n    allowed_tools: ["*"]\n  - plugin: chat_b\n    allowed_tools: [pollers_list]\n',
    'pollers.yaml': `pollers:\n  jobs:\n    - id: news\n      kind: rss\n      agent: a\n      schedule: { cron: "0 0 3 * * *" }\n      config:\n        feed_url: http://127.0.0.1:${(feed.address() as AddressInfo).port}/f\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: chat_b, to: "42" }\n`,
  });
  d = await startDaemon(w);
});

afterAll(async () => {
  await d?.stop('SIGKILL');
  await tg.close();
  await llm.close();
  await new Promise<void>((r) => feed.close(() => r()));
  w.cleanup();
});

async function ask(
  text: string,
  call?: { name: string; arguments: Record<string, unknown> },
): Promise<string> {
  if (call) script.set(text, call);
  const before = tg.sends.length;
  tg.enqueueText({ chatId: 42, text });
  const end = Date.now() + 10_000;
  while (tg.sends.length === before) {
    if (Date.now() > end) throw new Error(`no reply to ${text}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return tg.sends.at(-1)!.text;
}

describe('poller tools through a real daemon', () => {
  it('the model sees the six pollers_* tools and the mail kind tool, and no tool that creates or deletes jobs', async () => {
    await ask('hello');
    const names = toolNames(llm.requests.at(-1)!);
    for (const t of [
      'pollers_list',
      'pollers_show',
      'pollers_run',
      'pollers_pause',
      'pollers_resume',
      'pollers_reset',
      'mail_count_unread',
    ])
      expect(names).toContain(t);
    expect(names.filter((n) => /create|delete|add|remove/.test(n))).toEqual([]);
  });

  it('pollers_list, pollers_show, pollers_run report the job', async () => {
    expect(await ask('list', { name: 'pollers_list', arguments: {} })).toContain('news');
    expect(await ask('show', { name: 'pollers_show', arguments: { id: 'news' } })).toContain('rss');
    expect(await ask('run', { name: 'pollers_run', arguments: { id: 'news' } })).toMatch(/ok/);
    await d.waitFor(/msg="poller tool call" .*agent_id=a tool=pollers_run job_id=news/);
  });

  it('pollers_pause and pollers_resume change the job; each call is logged with agent and job id', async () => {
    expect(await ask('pause', { name: 'pollers_pause', arguments: { id: 'news' } })).toMatch(/paused/);
    await d.waitFor(/msg="poller tool call" .*agent_id=a tool=pollers_pause job_id=news/);
    expect(await ask('resume', { name: 'pollers_resume', arguments: { id: 'news' } })).toMatch(/paused/);
  });

  it('pollers_reset needs confirm: true', async () => {
    expect(await ask('reset no', { name: 'pollers_reset', arguments: { id: 'news' } })).toMatch(/confirm/);
    expect(
      await ask('reset yes', { name: 'pollers_reset', arguments: { id: 'news', confirm: true } }),
    ).not.toMatch(/confirm/);
  });
});
