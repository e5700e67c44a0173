// One daemon process of the fault run (this checkout's built `agent` bin, `--log-format json`, optionally
// under a skewed clock) and the `agent` CLI. Vitest-free, so that `pnpm jepsen` runs it as plain Node.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { RawLogLine } from './history.js';
import { skewedCommand } from './skew.js';

/** `dist/bin.js` of the daemon package, found from wherever this file was compiled to. */
function daemonBin(from: string = import.meta.dirname): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name !== '@agent/daemon') continue;
    const bin = join(dir, 'dist', 'bin.js');
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`pnpm run build\` first`);
    return bin;
  }
  throw new Error(`no @agent/daemon package above ${from}`);
}

/** The caller's environment without the NODE_PATH a test runner sets (an operator's daemon has none). */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { NODE_PATH: _runnerOnly, ...env } = process.env;
  return { ...env, NO_COLOR: '1', ...extra };
}

export interface RunningDaemon {
  readonly pid: number;
  /** From the `daemon started` record. */
  readonly adminUrl: string;
  readonly metricsUrl: string;
  /** Resolves with the exit code (null after a signal) when the process is gone. */
  readonly exited: Promise<number | null>;
}

export interface SpawnDaemonOptions {
  /** The work directory: `config/` with the host-local files; the daemon's data directory goes here too. */
  cwd: string;
  /** Every line the process writes (stdout and stderr) is appended here with when the harness read it. */
  lines: RawLogLine[];
  skewSecs?: number;
  startTimeoutMs?: number;
  now?: () => number;
}

/** The `daemon started` record of a JSON log line, if it is one. */
function startedRecord(line: string): { admin_url?: string; metrics_url?: string } | undefined {
  if (!line.includes('"daemon started"')) return undefined;
  try {
    const body = JSON.parse(line) as { msg?: string; admin_url?: string; metrics_url?: string };
    return body.msg === 'daemon started' ? body : undefined;
  } catch {
    return undefined;
  }
}

/** Error of a daemon that exited before it started; `output` holds its lines, for callers that retry. */
export class DaemonStartError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
  }
}

/** Starts `agent --config-dir config --log-format json` in `cwd`; resolves once it logged `daemon started`. */
export function spawnDaemon(o: SpawnDaemonOptions): Promise<RunningDaemon> {
  const now = o.now ?? Date.now;
  const args = [daemonBin(), '--config-dir', 'config', '--log-format', 'json'];
  const cmd =
    o.skewSecs === undefined || o.skewSecs === 0
      ? { command: process.execPath, args, env: {} }
      : skewedCommand(process.execPath, args, o.skewSecs);
  const proc = spawn(cmd.command, cmd.args, {
    cwd: o.cwd,
    env: childEnv(cmd.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const mine: string[] = [];
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let started = false;
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new DaemonStartError(`daemon in ${o.cwd} did not start in time`, mine.join('\n')));
    }, o.startTimeoutMs ?? 30_000);
    const onLine = (line: string): void => {
      o.lines.push({ at: now(), line });
      if (started) return;
      mine.push(line);
      const rec = startedRecord(line);
      if (rec === undefined) return;
      started = true;
      clearTimeout(timer);
      resolve({
        pid: proc.pid ?? 0,
        adminUrl: rec.admin_url ?? '',
        metricsUrl: rec.metrics_url ?? '',
        exited,
      });
    };
    for (const stream of [proc.stdout, proc.stderr]) {
      let buf = '';
      stream.on('data', (chunk: Buffer) => {
        buf += chunk.toString('utf8');
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          onLine(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      });
    }
    void exited.then((code) => {
      if (started) return;
      clearTimeout(timer);
      reject(new DaemonStartError(`daemon in ${o.cwd} exited ${code} before it started`, mine.join('\n')));
    });
  });
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `agent <args>` in `cwd` and collects its output. */
export function runAgent(cwd: string, args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [daemonBin(), ...args], {
      cwd,
      env: childEnv({}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
