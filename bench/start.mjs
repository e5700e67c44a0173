// The example config (`config/` of this repository) started as an operator starts it: the built `agent` bin on
// a copy of the directory. Measured per round: spawn -> `daemon started` on stderr, then resident memory once
// the daemon has been idle (`--idle` seconds, 20 by default; VmRSS from /proc, as `ps` shows it). In the same
// rounds, the yardsticks: `node -e 0` (bare start) and an idle `node` that only keeps a timer (bare memory).
// Targets (issue: performance): cold start <= 400 ms to ready, idle RSS <= 60 MB.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_BIN, root as repoRoot, sleep } from './lib/daemon.mjs';
import { memMb } from './lib/procfs.mjs';

const EXAMPLE = join(repoRoot, 'config');
const READY_TARGET_MS = 400;
const IDLE_RSS_TARGET_MB = 60;

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const quick = process.argv.includes('--quick');
const rounds = arg('--rounds', quick ? 2 : 5);
const idleSecs = arg('--idle', quick ? 5 : 20);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function stop(proc) {
  return new Promise((res) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return res();
    proc.once('exit', () => res());
    proc.kill('SIGTERM');
  });
}

/** Spawns the daemon on a fresh copy of the example config; resolves at `daemon started`. */
async function startExample() {
  const root = mkdtempSync(join(tmpdir(), 'bench-start-'));
  cpSync(EXAMPLE, join(root, 'config'), { recursive: true });
  // Port 0: rounds never collide with each other or with a daemon the operator runs.
  const runtime = join(root, 'config', 'runtime.yaml');
  writeFileSync(
    runtime,
    readFileSync(runtime, 'utf8').replace(/listen: 127\.0\.0\.1:\d+/g, 'listen: 127.0.0.1:0'),
  );
  const t0 = performance.now();
  const proc = spawn(process.execPath, [DAEMON_BIN, '--config-dir', 'config'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const readyMs = await new Promise((resolve, reject) => {
    let buf = '';
    proc.stderr.on('data', (d) => {
      buf += d;
      if (buf.includes('daemon started')) resolve(performance.now() - t0);
    });
    proc.once('exit', () => reject(new Error(`daemon exited before it started:\n${buf}`)));
  });
  return { proc, readyMs, root };
}

async function bareStartMs() {
  const t0 = performance.now();
  const p = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((r) => p.once('exit', r));
  return performance.now() - t0;
}

const ready = [];
const bare = [];
const ratios = [];
const idle = [];
const bareIdle = [];
for (let i = 0; i < rounds; i++) {
  const b = await bareStartMs();
  const { proc, readyMs, root } = await startExample();
  bare.push(b);
  ready.push(readyMs);
  ratios.push(readyMs / b);
  const idler = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await sleep(idleSecs * 1000);
  idle.push(memMb(proc.pid, 'VmRSS'));
  bareIdle.push(memMb(idler.pid, 'VmRSS'));
  await Promise.all([stop(proc), stop(idler)]);
  rmSync(root, { recursive: true, force: true });
}

const r = {
  ready: median(ready),
  bare: median(bare),
  ratio: median(ratios),
  idle: median(idle),
  bareIdle: median(bareIdle),
};
console.log(
  `start: the example config, spawn -> "daemon started", then RSS after ${idleSecs} s idle (medians of ${rounds} rounds)`,
);
console.log(`  node -e 0                ${r.bare.toFixed(0).padStart(4)} ms  (bare Node start)`);
console.log(
  `  agent (example config)   ${r.ready.toFixed(0).padStart(4)} ms  ${r.ratio.toFixed(1)}x node -e 0`,
);
console.log(`  idle node (a timer)      ${r.bareIdle.toFixed(0).padStart(4)} MB  (bare Node memory)`);
console.log(
  `  idle daemon              ${r.idle.toFixed(0).padStart(4)} MB  ${(r.idle - r.bareIdle).toFixed(0)} MB above bare Node`,
);
const verdict = (ok) => (ok ? 'OK' : 'MISSED');
console.log(
  `  target: ready <= ${READY_TARGET_MS} ms -> ${r.ready.toFixed(0)} ms ${verdict(r.ready <= READY_TARGET_MS)}`,
);
console.log(
  `  target: idle RSS <= ${IDLE_RSS_TARGET_MB} MB -> ${r.idle.toFixed(0)} MB ${verdict(r.idle <= IDLE_RSS_TARGET_MB)}`,
);
