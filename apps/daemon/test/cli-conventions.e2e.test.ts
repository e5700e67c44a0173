// Operator conventions of the `agent` command line, on the real bin: version, usage errors, help, finding the
// daemon from another directory, and start errors that name their setting.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  agentFile,
  baseConfig,
  runCli,
  startDaemon,
  workdir,
  type DaemonProcess,
  type Workdir,
} from './harness.js';

const VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }
).version;

let dirs: Workdir[] = [];
let daemons: DaemonProcess[] = [];
let scratch: string[] = [];
afterEach(async () => {
  for (const d of daemons) await d.stop('SIGKILL');
  for (const w of dirs) w.cleanup();
  for (const s of scratch) rmSync(s, { recursive: true, force: true });
  dirs = [];
  daemons = [];
  scratch = [];
});

async function boot(files: Record<string, string> = baseConfig()): Promise<{ w: Workdir; d: DaemonProcess }> {
  const w = workdir(files);
  dirs.push(w);
  const d = await startDaemon(w);
  daemons.push(d);
  return { w, d };
}

const started = (d: DaemonProcess): string => d.lines.find((l) => l.includes('msg="daemon started"'))!;
const adminUrlOf = (d: DaemonProcess): string => /admin_url=(\S+)/.exec(started(d))![1]!;

describe('version', () => {
  it('agent --version prints the daemon version and exits 0', async () => {
    const w = workdir({});
    dirs.push(w);
    const r = await runCli(w, ['--version']);
    expect(r).toMatchObject({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });

  it('the daemon reports it: daemon started line, agent_build_info, GET /admin/info', async () => {
    const { w, d } = await boot();
    expect(started(d)).toContain(` daemon_version=${VERSION} `);
    expect(started(d)).toMatch(/ version=1 /);
    expect(await d.metric('agent_build_info', { version: VERSION, node: process.versions.node })).toBe(1);
    const info = (await (await fetch(`${adminUrlOf(d)}/admin/info`)).json()) as Record<string, unknown>;
    expect(info).toEqual({
      version: VERSION,
      pid: d.proc.pid,
      started_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      config_dir: join(w.root, 'config'),
      data_dir: join(w.root, 'data'),
      broker: { kind: 'local', socket: join(w.root, 'data', 'broker.sock') },
      metrics_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/),
    });
  });
});

describe('usage errors exit 2 with a short hint', () => {
  it.each([
    [['polers', 'list'], /unknown command "polers"; did you mean "pollers"\?/, 'agent --help'],
    [
      ['pollers', 'lst'],
      /unknown command "lst" for agent pollers; did you mean "list"\?/,
      'agent pollers --help',
    ],
    [['pollers', 'list', '--bogus'], /Unknown argument: bogus/, 'agent pollers list --help'],
    [['pollers', 'show'], /missing an argument for agent pollers show/, 'agent pollers show --help'],
    [['--log-format', 'xml'], /Argument: log-format, Given: "xml"/, 'agent --help'],
    [
      ['pollers', 'list', '--admin-url'],
      /Not enough arguments following: admin-url/,
      'agent pollers list --help',
    ],
    [['--config-dir'], /Not enough arguments following: config-dir/, 'agent --help'],
  ])('agent %j', async (args, message, help) => {
    const w = workdir({});
    dirs.push(w);
    const r = await runCli(w, args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(`Run "${help}" for usage.`);
    // A hint, not the whole help text.
    expect(r.stderr).not.toContain('Options:');
    expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(3);
  });
});

/** The rows of the exit-code table in docs/cli.md: command -> [0, 1, 2], backticks dropped. */
function documentedExitCodes(): Map<string, string[]> {
  const md = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'cli.md'), 'utf8');
  const table = md.slice(md.indexOf('## Exit codes'));
  const rows = new Map<string, string[]>();
  for (const line of table.split('\n')) {
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim().replace(/`/g, ''));
    if (cells.length === 4 && cells[0]!.startsWith('agent')) rows.set(cells[0]!, cells.slice(1));
  }
  return rows;
}

const oneLine = (s: string): string => s.replace(/\s+/g, ' ');

describe('help', () => {
  it('every pollers command lists --config-dir, --admin-url and --json', async () => {
    const w = workdir({});
    dirs.push(w);
    for (const args of [['pollers'], ['pollers', 'list'], ['pollers', 'show'], ['pollers', 'reset']]) {
      const r = await runCli(w, [...args, '--help']);
      expect(r.code, args.join(' ')).toBe(0);
      for (const flag of ['--config-dir', '--admin-url', '--json'])
        expect(r.stdout, args.join(' ')).toContain(flag);
    }
    expect((await runCli(w, ['reload', '--help'])).stdout).toContain('--config-dir');
  });

  it("each command's help ends with its row of the exit-code table in docs/cli.md", async () => {
    const w = workdir({});
    dirs.push(w);
    const rows = documentedExitCodes();
    const line = (cmd: string): string => {
      const [ok, failed, attention] = rows.get(cmd)!;
      return `Exit codes: 0 ${ok}; 1 ${failed}; 2 ${attention}.`;
    };
    const commands = [
      'reload',
      ...['list', 'show', 'run', 'pause', 'resume', 'reset', 'reload'].map((a) => `pollers ${a}`),
      'config push',
      'cluster status',
    ];
    expect([...rows.keys()].sort()).toEqual(
      [
        'agent (the daemon)',
        'agent --check-config',
        'agent completion',
        ...commands.map((c) => `agent ${c}`),
      ].sort(),
    );
    const helps = await Promise.all(commands.map((c) => runCli(w, [...c.split(' '), '--help'])));
    helps.forEach((r, i) => expect(oneLine(r.stdout), commands[i]).toContain(line(`agent ${commands[i]}`)));
    const top = oneLine((await runCli(w, ['--help'])).stdout);
    expect(top).toContain(line('agent (the daemon)'));
    const [ok, failed, attention] = rows.get('agent --check-config')!;
    expect(top).toContain(`With --check-config: 0 ${ok}; 1 ${failed}; 2 ${attention}.`);
  });
});

describe('finding the daemon from another directory', () => {
  it('agent reload --config-dir <A>/config works from dir B (the socket comes from GET /admin/info)', async () => {
    const { w } = await boot();
    const elsewhere = mkdtempSync(join(tmpdir(), 'agent-elsewhere-'));
    scratch.push(elsewhere);
    // admin.listen is port 0 in tests, so the client learns the admin URL from the environment.
    const adminUrl = adminUrlOf(daemons[0]!);
    // A change to apply (with nothing changed, the reload answers the running version).
    w.write('agents.d/a.yaml', agentFile('changed'));
    const r = await runCli(
      w,
      ['reload', '--config-dir', w.configDir],
      { AGENT_ADMIN_URL: adminUrl },
      elsewhere,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^reload v2: applied=1 rejected=0/);
    // Without a daemon to ask, the client resolves data_dir against its own directory and says so at once.
    const down = await runCli(
      w,
      ['reload', '--config-dir', w.configDir],
      { AGENT_ADMIN_URL: 'http://127.0.0.1:9' },
      elsewhere,
    );
    expect(down.code).toBe(1);
    expect(down.stderr).toContain(join(elsewhere, 'data', 'broker.sock'));
    expect(down.stderr).not.toContain('within 5 s');
  });
});

describe('start errors name the setting', () => {
  it('a port in use: metrics.listen or admin.listen, and "another daemon running?"', async () => {
    const { d } = await boot();
    const metricsPort = new URL(d.metricsUrl).port;
    const adminPort = new URL(adminUrlOf(d)).port;
    const cases: [string, string][] = [
      [
        `metrics:\n  listen: 127.0.0.1:${metricsPort}\nadmin:\n  listen: 127.0.0.1:0\n`,
        'runtime.yaml metrics.listen',
      ],
      [
        `metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:${adminPort}\n`,
        'runtime.yaml admin.listen',
      ],
    ];
    for (const [runtime, setting] of cases) {
      const w2 = workdir(baseConfig({ runtime }));
      dirs.push(w2);
      const r = await runCli(w2, ['--config-dir', 'config']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `agent: cannot start: cannot listen on 127.0.0.1:${setting.endsWith('metrics.listen') ? metricsPort : adminPort} (${setting}): the address is already in use; another daemon running? stop it, or change ${setting}`,
      );
    }
  });
});
