// The real `agent` binary against a real daemon: every poller command, its output and exit codes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startDaemon, workdir, type DaemonProcess, type Workdir } from './harness.js';

let feed: Server;
let w: Workdir;
let d: DaemonProcess;
let adminUrl: string;
let fetches = 0;

beforeAll(async () => {
  feed = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/rss+xml' });
    res.end(
      '<?xml version="1.0"?><rss version="2.0"><channel><title>F</title><item><guid>a</guid><title>A</title></item></channel></rss>',
    );
  });
  await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/f?token=abc`;
  w = workdir({
    'llm.yaml':
      'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: key-1234\n',
    'plugins/log.yaml': 'instances:\n  default: {}\n',
    'runtime.yaml': 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n',
    'agents.d/a.yaml':
      'model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n',
    'pollers.yaml': `pollers:\n  jobs:\n    - id: news\n      kind: rss\n      agent: a\n      schedule: { cron: "0 0 3 * * *", tz: Europe/Paris }\n      config:\n        feed_url: "${url}"\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`,
  });
  d = await startDaemon(w);
  adminUrl = /admin_url=(\S+)/.exec(d.lines.find((l) => l.includes('daemon started'))!)![1]!;
});

afterAll(async () => {
  await d?.stop('SIGKILL');
  await new Promise<void>((r) => feed.close(() => r()));
  w.cleanup();
});

const cli = (...args: string[]) => runCli(w, ['pollers', ...args, '--admin-url', adminUrl]);

describe('agent pollers against a real daemon', () => {
  it('list prints an aligned table, and --json the API body', async () => {
    const r = await cli('list');
    expect(r.code, r.stderr).toBe(0);
    const [header, row] = r.stdout.trim().split('\n');
    expect(header).toMatch(/^ID\s+KIND\s+AGENT\s+SCHEDULE\s+PAUSED\s+BREAKER/);
    expect(row).toMatch(/^news\s+rss\s+a\s+/);
    expect(header!.indexOf('KIND')).toBe(row!.indexOf('rss'));
    const j = await cli('list', '--json');
    expect(JSON.parse(j.stdout)).toMatchObject({
      jobs: [{ id: 'news', kind: 'rss', agent: 'a', paused: false }],
    });
  });

  it('show prints the job, never the query string of its URL', async () => {
    const r = await cli('show', 'news');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('news');
    expect(r.stdout).not.toContain('token=abc');
    expect(r.stdout).toContain('/f?token=[redacted]');
  });

  it('run ticks now and prints status and item counts', async () => {
    const before = fetches;
    const r = await cli('run', 'news');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/ok/);
    expect(r.stdout).toMatch(/seen/);
    expect(fetches).toBe(before + 1);
  });

  it('pause and resume change the paused flag', async () => {
    expect((await cli('pause', 'news')).code).toBe(0);
    expect(JSON.parse((await cli('list', '--json')).stdout).jobs[0].paused).toBe(true);
    expect((await cli('resume', 'news')).code).toBe(0);
    expect(JSON.parse((await cli('list', '--json')).stdout).jobs[0].paused).toBe(false);
  });

  it('reset needs --yes: without it exit 2 and nothing changes', async () => {
    const no = await cli('reset', 'news');
    expect(no.code).toBe(2);
    expect(no.stderr).toMatch(/--yes/);
    const yes = await cli('reset', 'news', '--yes');
    expect(yes.code, yes.stderr).toBe(0);
  });

  it('reload prints the plan', async () => {
    const r = await cli('reload');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'pollers reload: add=0 replace=0 remove=0 keep=1 rejected=0',
      '  ✓ agent a',
    ]);
  });

  it('POST /admin/credentials/reload answers what was rebuilt, with no new configuration version', async () => {
    const before = d.count(/config reload applied/);
    const res = await fetch(`${adminUrl}/admin/credentials/reload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ channels: [], pollers: true });
    await d.waitFor(/msg="credentials reloaded"/);
    expect(d.count(/config reload applied/)).toBe(before);
  });

  it('an unknown job: the API message and exit 1', async () => {
    const r = await cli('show', 'nope');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/nope/);
  });

  it('a daemon that is not running: one clear line and exit 1', async () => {
    const r = await runCli(w, ['pollers', 'list', '--admin-url', 'http://127.0.0.1:9']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('the daemon is not running');
  });
});
