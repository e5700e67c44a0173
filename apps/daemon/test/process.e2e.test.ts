// The daemon and the client commands as Unix processes: closed pipes, signals and Node's own warnings, on
// real processes with real pipes.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { agentFile, baseConfig, BIN, daemonScope, type Workdir } from './harness.js';

const scope = daemonScope();
const { boot } = scope;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** utime + stime of a process, in clock ticks (1/100 s on Linux). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: state is field 3.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[14 - 3]) + Number(f[15 - 3]);
}

/** Exit code, or 'still running' when the process outlives `ms`. */
function exitWithin(proc: ChildProcess, ms: number): Promise<number | null | 'still running'> {
  if (proc.exitCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('still running'), ms);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function metricNow(url: string, name: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(url, { signal: AbortSignal.timeout(1000) })).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : undefined;
  } catch {
    return undefined;
  }
}

describe('a daemon whose stderr reader is gone (`agent 2>&1 | tee log`, then Ctrl-C)', () => {
  it.skipIf(!existsSync('/proc/self/stat'))(
    'keeps working quietly at idle CPU, and SIGTERM stops it within seconds with exit 0',
    async () => {
      const { w, d } = await boot(baseConfig());
      // Close the read end: from now on every write to the daemon's fd 2 fails with EPIPE.
      d.proc.stderr!.destroy();
      // A reload logs several lines into the closed pipe.
      w.write('agents.d/a.yaml', agentFile('changed after the pipe closed'));
      const deadline = Date.now() + 10_000;
      let applied: number | undefined;
      while (Date.now() < deadline) {
        applied = await metricNow(d.metricsUrl, 'config_reload_applied_total');
        if ((applied ?? 0) >= 1) break;
        await sleep(100);
      }
      expect(applied, 'the reload was applied (and logged) after stderr closed').toBeGreaterThanOrEqual(1);

      const pid = d.proc.pid!;
      const before = cpuTicks(pid);
      await sleep(1000);
      const used = cpuTicks(pid) - before;
      // An idle daemon uses a tick or two per second; the EPIPE loop used 40-100.
      expect(used, `CPU ticks in 1 s after stderr closed`).toBeLessThan(20);

      const t0 = Date.now();
      d.proc.kill('SIGTERM');
      expect(await exitWithin(d.proc, 5000)).toBe(0);
      expect(Date.now() - t0).toBeLessThan(5000);
    },
    30_000,
  );
});

describe('signals', () => {
  it('SIGINT stops the daemon cleanly (exit 0) and releases its ports', async () => {
    const { d } = await boot(baseConfig());
    expect(await d.stop('SIGINT')).toBe(0);
    expect(d.lines.some((l) => l.includes('msg="daemon stopped"'))).toBe(true);
    await expect(fetch(d.metricsUrl)).rejects.toThrow();
  });
});

describe("Node's own warnings", () => {
  it('are one log record (name, message, code), never the default multi-line text', async () => {
    // A preloaded module raises a two-line warning in the daemon process when asked (SIGUSR2).
    const w = scope.workdir(baseConfig());
    const preload = join(w.root, 'warn-on-signal.mjs');
    writeFileSync(
      preload,
      "process.on('SIGUSR2', () => process.emitWarning('first line\\nsecond line', { type: 'TestWarning', code: 'TEST_WARNING' }));\n",
    );
    const d = await scope.start(w, { NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` });
    const from = d.lines.length;
    d.proc.kill('SIGUSR2');
    const line = await d.waitFor(/msg="node warning"/, 5000, from);
    expect(line).toMatch(
      /level=warn msg="node warning" name=TestWarning message="first line\\nsecond line" code=TEST_WARNING$/,
    );
    await sleep(200);
    const after = d.lines.slice(from);
    expect(after.filter((l) => /TestWarning|second line/.test(l))).toEqual([line]);
    expect(after.some((l) => l.includes('(node:'))).toBe(false);
  });
});

const POLLERS = `pollers:\n  jobs:\n    - id: news\n      kind: rss\n      agent: a\n      schedule: { cron: "0 0 3 * * *", tz: UTC }\n      config:\n        feed_url: "http://127.0.0.1:9/feed"\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`;

/** Runs the bin with its stdout pipe already closed by the reader. */
function runClosedStdout(w: Workdir, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], {
      cwd: w.root,
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    p.stdout.destroy();
    let stderr = '';
    p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    p.once('exit', (code) => resolve({ code, stderr }));
  });
}

describe('client commands on a closed pipe (`agent pollers show <id> | head -1`)', () => {
  it('list, show and --help exit quietly with their exit code: no stack trace, no EPIPE', async () => {
    const { d, w } = await boot({ ...baseConfig(), 'pollers.yaml': POLLERS });
    const adminUrl = /admin_url=(\S+)/.exec(d.lines.find((l) => l.includes('daemon started'))!)![1]!;
    const runs = await Promise.all([
      runClosedStdout(w, ['pollers', 'list', '--admin-url', adminUrl]),
      runClosedStdout(w, ['pollers', 'show', 'news', '--admin-url', adminUrl]),
      runClosedStdout(w, ['pollers', 'show', 'news', '--json', '--admin-url', adminUrl]),
      runClosedStdout(w, ['pollers', '--help']),
    ]);
    for (const r of runs) expect(r).toEqual({ code: 0, stderr: '' });
  });
});
