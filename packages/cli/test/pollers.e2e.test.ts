import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { agent, assertBuilt, SECRET, startTestDaemon, type TestDaemon } from './daemon.js';

let daemon: TestDaemon;
const roots: string[] = [];
beforeAll(async () => {
  assertBuilt();
});
afterEach(async () => {
  await daemon?.close();
});
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function configDir(runtime: string): { root: string; dir: string } {
  const root = mkdtempSync(join(tmpdir(), 'cli-e2e-'));
  roots.push(root);
  const dir = join(root, 'config');
  mkdirSync(dir);
  writeFileSync(join(dir, 'runtime.yaml'), runtime);
  return { root, dir };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

// Every test starts the real bin several times; on a busy machine one start takes more than a second.
describe('agent pollers (real bin against a real admin server)', { timeout: 60_000 }, () => {
  it('list prints an aligned table', async () => {
    daemon = await startTestDaemon();
    const r = await agent(['pollers', 'list', '--admin-url', daemon.url]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('\x1b['); // not a terminal: no colour
    expect(r.stdout).toMatchInlineSnapshot(`
      "ID             KIND     AGENT      SCHEDULE                         PAUSED  BREAKER  LAST RUN  NEXT RUN              LAST STATUS  ERRORS
      digest-hourly  counter  assistant  cron "0 0 * * * *" Europe/Paris  no      closed   -         2026-03-01 09:00:00Z  -            0
      news           counter  assistant  every 60s                        no      closed   -         2026-03-01 08:00:00Z  -            0
      status-page    counter  assistant  every 300s                       yes     closed   -         -                     -            0
      "
    `);
  });

  it('list --json prints the API body', async () => {
    daemon = await startTestDaemon();
    const r = await agent(['pollers', 'list', '--json', '--admin-url', daemon.url]);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout) as { jobs: { id: string }[] };
    expect(body).toEqual({ jobs: await daemon.service.list(), rejected: [] });
  });

  it('finds the daemon through AGENT_ADMIN_URL, and through runtime.yaml admin.listen of --config-dir', async () => {
    daemon = await startTestDaemon();
    const viaEnv = await agent(['pollers', 'list'], { env: { AGENT_ADMIN_URL: daemon.url } });
    expect(viaEnv.code).toBe(0);
    expect(viaEnv.stdout).toContain('digest-hourly');
    const { root } = configDir(`admin:\n  listen: ${daemon.url.replace('http://', '')}\n`);
    const viaConfig = await agent(['pollers', 'list', '--config-dir', 'config'], { cwd: root });
    expect(viaConfig.code).toBe(0);
    expect(viaConfig.stdout).toContain('status-page');
  });

  it('show prints status, redacted config, cursor summary and lease holder', async () => {
    daemon = await startTestDaemon();
    daemon.next.items = ['a', 'b'];
    expect((await agent(['pollers', 'run', 'news', '--admin-url', daemon.url])).code).toBe(0);
    const r = await agent(['pollers', 'show', 'news', '--admin-url', daemon.url]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain(SECRET);
    expect(r.stdout).toMatchInlineSnapshot(`
      "id:           news
      kind:         counter
      agent:        assistant
      schedule:     every 60s
      paused:       no
      breaker:      closed (0 consecutive errors)
      last run:     2026-03-01 08:00:00Z (ok)
      last error:   -
      next run:     2026-03-01 08:00:00Z
      deliver:      chat_a -> u1
      failure to:   chat_b -> ops
      cursor:       12 bytes; 2 seen ids; baselined yes
      last alert:   -
      lease holder: none
      config:
        deliver:
          channel: chat_a
          to: u1
        message_template: "New: {title}"
        url: "https://feeds.example/news?token=[redacted]"
        headers:
          Authorization: "[redacted]"
      "
    `);
    const json = await agent(['pollers', 'show', 'news', '--json', '--admin-url', daemon.url]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: 'news',
      config: { headers: { Authorization: '[redacted]' } },
    });
  });

  it('run prints the status and item counts; a failed tick exits 1', async () => {
    daemon = await startTestDaemon();
    daemon.next.items = ['1'];
    let r = await agent(['pollers', 'run', 'news', '--admin-url', daemon.url]);
    expect(r).toMatchObject({ code: 0, stdout: 'run news: ok, 1 new item(s) seen, 0 delivered\n' });
    daemon.next.items = ['1', '2', '3'];
    r = await agent(['pollers', 'run', 'news', '--admin-url', daemon.url]);
    expect(r).toMatchObject({ code: 0, stdout: 'run news: ok, 2 new item(s) seen, 2 delivered\n' });
    expect(daemon.dispatcher.texts()).toEqual(['New: item 2', 'New: item 3']);
    daemon.next.error = new Error(`upstream 503 at https://feeds.example/x?token=${SECRET}`);
    r = await agent(['pollers', 'run', 'news', '--admin-url', daemon.url]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('run news: transient, 0 new item(s) seen, 0 delivered');
    expect(r.stdout).not.toContain(SECRET);
  });

  it('pause and resume change the job', async () => {
    daemon = await startTestDaemon();
    let r = await agent(['pollers', 'pause', 'news', '--admin-url', daemon.url]);
    expect(r).toMatchObject({ code: 0, stdout: 'paused news\n' });
    expect((await daemon.service.show('news')).paused).toBe(true);
    r = await agent(['pollers', 'resume', 'news', '--admin-url', daemon.url]);
    expect(r).toMatchObject({ code: 0, stdout: 'resumed news (next run 2026-03-01 08:00:00Z)\n' });
    expect((await daemon.service.show('news')).paused).toBe(false);
  });

  it('reset needs --yes: without it, exit 2 and nothing changes; with it, the cursor is cleared', async () => {
    daemon = await startTestDaemon();
    daemon.next.items = ['1'];
    await daemon.service.run('news');
    expect((await daemon.service.show('news')).cursor.present).toBe(true);
    let r = await agent(['pollers', 'reset', 'news', '--admin-url', daemon.url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('run again with --yes to confirm');
    expect((await daemon.service.show('news')).cursor.present).toBe(true);
    r = await agent(['pollers', 'reset', 'news', '--yes', '--admin-url', daemon.url]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toBe(
      'reset news: cursor, seen items and errors cleared; the next tick records a new baseline\n',
    );
    expect((await daemon.service.show('news')).cursor.present).toBe(false);
  });

  it('reload prints the plan and every rejected job with its reasons; exit 2 when a job was rejected', async () => {
    daemon = await startTestDaemon();
    const r = await agent(['pollers', 'reload', '--admin-url', daemon.url]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatchInlineSnapshot(`
      "pollers reload: add=1 replace=1 remove=1 keep=1 rejected=1
        + weather
        ~ news
        - status-page
        ✗ broken: config/pollers.yaml pollers.jobs[3].kind: kind "nope" is not registered [POLLER_UNKNOWN_KIND] (fix: registered kinds: counter; third-party kinds go in kind_packages)
      "
    `);
    expect(daemon.reloads).toBe(1);
    expect((await daemon.service.list()).map((j) => j.id)).toEqual(['digest-hourly', 'news', 'weather']);
  });

  it('an unknown job prints the API message and exits 1', async () => {
    daemon = await startTestDaemon();
    const cmds = [['show'], ['run'], ['pause'], ['resume'], ['reset', '--yes']];
    const results = await Promise.all(
      cmds.map((cmd) => agent(['pollers', cmd[0]!, 'ghost', ...cmd.slice(1), '--admin-url', daemon.url])),
    );
    results.forEach((r, i) => {
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `agent pollers ${cmds[i]![0]}: no poller job "ghost"; list the jobs with agent pollers list\n`,
      );
    });
  });

  it('reads the token file named by runtime.yaml and sends it; a wrong mode is refused', async () => {
    daemon = await startTestDaemon({ token: 'tok-0e1f2a3b' });
    const { root, dir } = configDir(
      `admin:\n  listen: ${daemon.url.replace('http://', '')}\n  token_file: secrets/admin.token\n`,
    );
    mkdirSync(join(root, 'secrets'));
    writeFileSync(join(root, 'secrets', 'admin.token'), 'tok-0e1f2a3b\n', { mode: 0o600 });
    let r = await agent(['pollers', 'list', '--config-dir', dir], { cwd: root });
    expect(r.code).toBe(0);
    chmodSync(join(root, 'secrets', 'admin.token'), 0o644);
    r = await agent(['pollers', 'list', '--config-dir', dir], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('chmod 600');
    expect(r.stderr).not.toContain('tok-0e1f2a3b');
    const noToken = await agent(['pollers', 'list', '--admin-url', daemon.url]);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain('Authorization: Bearer');
  });

  it('daemon not running: one clear line and exit 1', async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    const t0 = Date.now();
    const r = await agent(['pollers', 'list', '--admin-url', url]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`agent pollers: the daemon is not running (no admin server at ${url})\n`);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const { root } = configDir(`admin:\n  listen: 127.0.0.1:${port}\n`);
    const viaConfig = await agent(['pollers', 'show', 'x'], { cwd: root });
    expect(viaConfig.stderr).toBe(`agent pollers: the daemon is not running (no admin server at ${url})\n`);
  });

  it('--help for every command; reset without an id is a usage error', async () => {
    const cmds = ['list', 'show', 'run', 'pause', 'resume', 'reset', 'reload'];
    const helps = await Promise.all(cmds.map((cmd) => agent(['pollers', cmd, '--help'])));
    helps.forEach((r, i) => {
      expect(r.code, cmds[i]).toBe(0);
      expect(r.stdout).toContain(`agent pollers ${cmds[i]}`);
      expect(r.stdout).toContain('--admin-url');
    });
    const top = await agent(['pollers', '--help']);
    expect(top.stdout).toContain('agent pollers reset <id>');
    const usage = await agent(['pollers', 'reset']);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain('Not enough non-option arguments');
  }, 60_000);

  it('completion lists the pollers commands', async () => {
    const r = await agent(['--get-yargs-completions', 'pollers', '']);
    expect(r.code).toBe(0);
    for (const cmd of ['list', 'show', 'run', 'pause', 'resume', 'reset', 'reload'])
      expect(r.stdout).toContain(cmd);
  });
});
