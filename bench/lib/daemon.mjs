// The built daemon as a benchmark runs it: config files, one spawned process up to its `daemon started`
// line, and its metrics scraped as text.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DAEMON_BIN = join(root, 'apps/daemon/dist/bin.js');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Writes `files` (relative path → text) under `dir`. */
export function writeFiles(dir, files) {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
}

/** `runtime.yaml`: the data directory, listeners on free ports, JSON logs at info. */
export const runtimeYaml = (dataDir) =>
  `data_dir: ${dataDir}\nmetrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nlog:\n  level: info\n  format: json\n`;

/** `llm.yaml`, `plugins/log.yaml` and `agents` agents `a0..` bound to the log channel. */
export function agentFiles(agents) {
  const files = {
    'llm.yaml':
      'providers:\n  local:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: none\n',
    'plugins/log.yaml': 'instances:\n  default: {}\n',
  };
  for (let a = 0; a < agents; a++)
    files[`agents.d/a${a}.yaml`] =
      'model: { provider: local, name: m }\nsystem_prompt: x\ninbound_bindings:\n  - plugin: log\n    instance: default\n    outbound_allowlist: { log: [op] }\n';
  return files;
}

/** `pollers.yaml` with `jobs` rss jobs `feed-<i>` on `feedUrl(i)`, spread over `agents` agents. */
export function rssPollersYaml({ jobs, everySecs, agents, feedUrl, stateDb, maxConcurrentTicks }) {
  const parts = [
    'pollers:\n',
    stateDb ? `  state_db: ${stateDb}\n` : '',
    maxConcurrentTicks ? `  max_concurrent_ticks: ${maxConcurrentTicks}\n` : '',
    '  jobs:\n',
  ];
  for (let i = 0; i < jobs; i++)
    parts.push(
      `    - id: feed-${i}\n      kind: rss\n      agent: a${i % agents}\n      schedule: { every_secs: ${everySecs} }\n` +
        `      config:\n        feed_url: ${feedUrl(i)}\n        allow_private_networks: true\n` +
        `        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`,
    );
  return parts.join('');
}

/**
 * Spawns the daemon (`--config-dir configDir`, in `cwd`) and resolves once it logged `daemon started`
 * (JSON logs): its process, that line, when it was spawned (`performance.now()`), spawn→ready in ms, and the last log lines (for a failure report).
 * `nodeArgs` go to node (`--cpu-prof`); `onSpawn(child)` runs at once (samplers that watch the start).
 */
export async function spawnDaemon({
  cwd,
  configDir,
  env = process.env,
  nodeArgs = [],
  onSpawn = () => {},
  bin = DAEMON_BIN,
}) {
  const spawned = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, bin, '--config-dir', configDir], {
    cwd,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  onSpawn(child);
  const tail = [];
  const log = { tail, errors: 0, warnings: 0 };
  const started = await new Promise((resolve, reject) => {
    let buf = '';
    child.stderr.on('data', (d) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        tail.push(line);
        if (tail.length > 20) tail.shift();
        if (line.includes('"level":"error"')) log.errors++;
        if (line.includes('"level":"warn"')) log.warnings++;
        if (line.includes('"daemon started"')) resolve(JSON.parse(line));
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`daemon exited with ${code} before it started:\n${tail.join('\n')}`)),
    );
  });
  const exited = new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', r)));
  return { child, started, spawnedAt: spawned, readyMs: performance.now() - spawned, log, exited };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
export async function stopDaemon(d, graceMs = 30_000) {
  if (d.child.exitCode !== null || d.child.signalCode !== null) return;
  d.child.kill('SIGTERM');
  const timer = setTimeout(() => d.child.kill('SIGKILL'), graceMs);
  await d.exited;
  clearTimeout(timer);
}

export async function scrape(url) {
  return (await fetch(url)).text();
}

/** Sum of one counter family over its series, from a scrape; `labels` (a substring such as `result="claimed"`) filters. */
export function counterSum(text, name, labels = '') {
  let sum = 0;
  for (const line of text.split('\n'))
    if ((line.startsWith(`${name}{`) || line.startsWith(`${name} `)) && line.includes(labels))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}
