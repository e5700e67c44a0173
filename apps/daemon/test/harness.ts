// End-to-end harness: real daemon processes (the built `agent` bin) on temporary config directories.
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach } from 'vitest';
import { sleep } from '@agent/timers';

export const BIN = join(import.meta.dirname, '..', 'dist', 'bin.js');

/**
 * The environment of a spawned daemon or CLI: the test runner's, without the NODE_PATH that pnpm sets for it
 * (it would let a daemon resolve every workspace package, which an operator's daemon cannot).
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { NODE_PATH: _runnerOnly, ...env } = process.env;
  return { ...env, ...extra };
}
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
/**
 * The shared NATS server carries the daemons of every test file running at once: each file's daemons get
 * subjects of their own (the daemons of one file, a cluster's members among them, share them).
 */
const NATS_SUBJECT_PREFIX = `t${process.pid}-${randomBytes(4).toString('hex')}`;
const NATS_BROKER_YAML = `kind: nats\nurl: ${NATS_URL}\nsubject_prefix: ${NATS_SUBJECT_PREFIX}\n`;

/**
 * Deletes the chat inbound stream this test file's cluster daemons created on the shared NATS server
 * (streams outlive their daemons; each file has a prefix of its own). Call it in `afterAll`.
 */
export async function dropInboundStream(): Promise<void> {
  // Loaded here: most test files never talk to NATS themselves.
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const { inboundNames } = await import('@agent/chat-cluster');
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(inboundNames(NATS_SUBJECT_PREFIX).stream).catch(() => false);
  } finally {
    await nc.close();
  }
}

export interface Workdir {
  root: string;
  configDir: string;
  write(rel: string, content: string, mode?: number): void;
  /** Saves like vim and VS Code do: write a temporary file, then rename it over the target. */
  writeByRename(rel: string, content: string): void;
  remove(rel: string): void;
  cleanup(): void;
}

export function workdir(files: Record<string, string>): Workdir {
  const root = mkdtempSync(join(tmpdir(), 'agent-e2e-'));
  const configDir = join(root, 'config');
  const w: Workdir = {
    root,
    configDir,
    write(rel, content, mode) {
      const p = join(configDir, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
      if (mode !== undefined) chmodSync(p, mode);
    },
    writeByRename(rel, content) {
      const p = join(configDir, rel);
      const tmp = join(dirname(p), `.${Date.now()}.tmp`);
      writeFileSync(tmp, content);
      renameSync(tmp, p);
    },
    remove(rel) {
      rmSync(join(configDir, rel), { force: true });
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
  for (const [rel, content] of Object.entries(files)) w.write(rel, content);
  return w;
}

export interface DaemonProcess {
  proc: ChildProcess;
  lines: string[];
  metricsUrl: string;
  adminUrl: string;
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  count(pattern: RegExp): number;
  metric(name: string, labels?: Record<string, string>): Promise<number | undefined>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * `args` are added to the command line (e.g. `--log-level debug`). `bin` runs another `agent` executable
 * (an installed one) instead of this checkout's build.
 */
export async function startDaemon(
  w: Workdir,
  env: Record<string, string> = {},
  args: string[] = [],
  bin?: string,
): Promise<DaemonProcess> {
  const [cmd, argv] =
    bin === undefined
      ? [process.execPath, [BIN, '--config-dir', 'config', ...args]]
      : [bin, ['--config-dir', 'config', ...args]];
  const proc = spawn(cmd, argv, { cwd: w.root, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let buf = '';
  const onData = (chunk: Buffer): void => {
    buf += chunk.toString('utf8');
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    for (const wake of waiters) wake();
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));

  const waitFor = (pattern: RegExp, timeoutMs = 10_000, from = 0): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): boolean => {
        const hit = lines.slice(from).find((l) => pattern.test(l));
        if (hit) {
          waiters.delete(wake);
          clearTimeout(timer);
          resolve(hit);
          return true;
        }
        return false;
      };
      const wake = (): void => void check();
      const timer = setTimeout(() => {
        waiters.delete(wake);
        reject(new Error(`timed out waiting for ${pattern}; log:\n${lines.join('\n')}`));
      }, timeoutMs);
      waiters.add(wake);
      check();
      void exited.then(() => {
        if (waiters.has(wake)) {
          waiters.delete(wake);
          clearTimeout(timer);
          reject(new Error(`daemon exited while waiting for ${pattern}; log:\n${lines.join('\n')}`));
        }
      });
    });

  const started = await waitFor(/msg="daemon started"/, 20_000);
  const metricsUrl = /metrics_url=(\S+)/.exec(started)?.[1] ?? '';
  const adminUrl = /admin_url=(\S+)/.exec(started)?.[1] ?? '';
  return {
    proc,
    lines,
    metricsUrl,
    adminUrl,
    waitFor,
    count: (p) => lines.filter((l) => p.test(l)).length,
    async metric(name, labels = {}) {
      const text = await (await fetch(metricsUrl)).text();
      for (const line of text.split('\n')) {
        if (!line.startsWith(name)) continue;
        const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
        if (!m || m[1] !== name) continue;
        const got = Object.fromEntries(
          [...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]),
        );
        if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
      }
      return undefined;
    },
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill(signal);
      return exited;
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the bin in `w.root`, or in `cwd` (a client run from another directory). */
export function runCli(
  w: Workdir,
  args: string[],
  env: Record<string, string> = {},
  cwd = w.root,
): Promise<CliResult> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: childEnv({ NO_COLOR: '1', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.once('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
  });
}

export const LLM = (key = 'key-one-1111', baseUrl = 'http://127.0.0.1:9/v1'): string =>
  `providers:\n  main:\n    type: openai\n    base_url: ${baseUrl}\n    api_key: ${key}\n`;

export const agentFile = (prompt = 'hello', extra = ''): string =>
  `model:\n  provider: main\n  name: m1\nsystem_prompt: ${prompt}\ninbound_bindings:\n  - plugin: log\n    instance: default\n    allowed_tools: ["*"]\n    outbound_allowlist:\n      log: [op]\n${extra}`;

export function baseConfig(
  opts: { agents?: string[]; broker?: 'local' | 'nats'; runtime?: string } = {},
): Record<string, string> {
  const files: Record<string, string> = {
    'llm.yaml': LLM(),
    'plugins/log.yaml': 'instances:\n  default: {}\n',
    'runtime.yaml':
      opts.runtime ??
      'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  debounce_ms: 200\n',
    'broker.yaml': opts.broker === 'nats' ? NATS_BROKER_YAML : 'kind: local\n',
  };
  for (const a of opts.agents ?? ['a']) files[`agents.d/${a}.yaml`] = agentFile();
  return files;
}

/** A runtime.yaml whose watcher never fires within a test: every change waits for an explicit reload. */
export const NO_WATCHER =
  'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  debounce_ms: 600000\n  max_wait_ms: 600000\n';

/** A runtime.yaml whose watcher waits longer than a test: versions then come from explicit reloads alone. */
export const SLOW_WATCHER =
  'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  debounce_ms: 4000\n  max_wait_ms: 4000\n';

export interface DaemonScope {
  /** A work directory removed after the test. */
  workdir(files: Record<string, string>): Workdir;
  /** A daemon on a new work directory; SIGKILLed after the test. */
  boot(
    files: Record<string, string>,
    env?: Record<string, string>,
  ): Promise<{ w: Workdir; d: DaemonProcess }>;
  /** A daemon on an existing work directory; SIGKILLed after the test. */
  start(w: Workdir, env?: Record<string, string>, args?: string[]): Promise<DaemonProcess>;
}

/** How much of each daemon's log a failed test prints, and how much an `until` timeout names. */
const FAILED_TEST_LOG_LINES = 400;
const UNTIL_LOG_LINES = 25;

/** Work directories and daemons of one test file, cleaned up after each test. */
export function daemonScope(): DaemonScope {
  let dirs: Workdir[] = [];
  let daemons: DaemonProcess[] = [];
  afterEach(async ({ task }) => {
    // A failed test shows what its daemons said: a timeout alone does not tell which step stalled.
    if (task.result?.state === 'fail') {
      daemons.forEach((d, i) => {
        const tail = d.lines.slice(-FAILED_TEST_LOG_LINES);
        process.stderr.write(`--- daemon ${i} (pid ${d.proc.pid}), last ${tail.length} log lines ---\n`);
        process.stderr.write(`${tail.join('\n')}\n`);
      });
    }
    for (const d of daemons) await d.stop('SIGKILL');
    for (const w of dirs) w.cleanup();
    dirs = [];
    daemons = [];
  });
  const scope: DaemonScope = {
    workdir(files) {
      const w = workdir(files);
      dirs.push(w);
      return w;
    },
    async start(w, env = {}, args = []) {
      const d = await startDaemon(w, env, args);
      daemons.push(d);
      return d;
    },
    async boot(files, env = {}) {
      const w = scope.workdir(files);
      return { w, d: await scope.start(w, env) };
    },
  };
  return scope;
}

/**
 * Waits until `cond` holds, looking every 100 ms; fails naming `what` after `ms`, with the last log lines
 * of `daemons` in the error.
 */
export async function until(
  cond: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
  daemons: DaemonProcess[] = [],
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) {
      const logs = daemons.map((d, i) => `daemon ${i}:\n${d.lines.slice(-UNTIL_LOG_LINES).join('\n')}`);
      throw new Error([`timed out waiting for ${what}`, ...logs].join('\n'));
    }
    await sleep(100);
  }
}

/** The texts the `log` channel of these work directories wrote to `out.jsonl`, in order per directory. */
export function loggedTexts(...hosts: Workdir[]): string[] {
  return hosts.flatMap((w) => {
    const f = join(w.root, 'out.jsonl');
    if (!existsSync(f)) return [];
    return readFileSync(f, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { text: string }).text);
  });
}
