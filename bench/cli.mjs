// Wall time of the built `agent` bin against an admin server with 1,000 jobs, run where an operator runs it: a
// directory whose config/runtime.yaml names the admin server. Measured in the same run, in rounds that take
// one sample of each command in turn (so that a machine getting slower or faster moves every figure alike):
// `node -e 0` (bare Node start), `agent --version` (the bin alone: no parser, no client), `agent pollers list`, and
// curl of the same endpoint. Targets: `agent pollers list` at most 2x `node -e 0`; under 3x curl.
// The admin server is a real createAdminApp served in-process.
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdminApp, serveAdmin } from '../packages/admin-api/dist/index.js';
import { silentLogger } from '../packages/log/dist/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'apps', 'daemon', 'dist', 'bin.js');
const NODE_TARGET = 2;
const CURL_TARGET = 3;

function summaries(n) {
  const jobs = [];
  for (let i = 0; i < n; i++)
    jobs.push({
      id: `job-${String(i).padStart(4, '0')}`,
      kind: ['rss', 'mail', 'webhook_poll', 'calendar'][i % 4],
      agent: `agent-${i % 7}`,
      schedule: i % 3 ? `every ${60 * (1 + (i % 5))}s` : 'cron "0 */5 * * * *" UTC',
      paused: i % 11 === 0,
      breaker: i % 13 === 0 ? 'open' : 'closed',
      breaker_state: i % 13 === 0 ? 2 : 0,
      consecutive_errors: i % 13 === 0 ? 5 : 0,
      last_status: i % 13 === 0 ? 'transient' : 'ok',
      last_error: null,
      last_run_at: '2026-03-01T08:00:00.000Z',
      next_run_at: '2026-03-01T08:05:00.000Z',
    });
  return jobs;
}

/** Runs a command without blocking this process (it serves the requests). Returns ms and output bytes. */
function timed(cmd, args, cwd) {
  return new Promise((resolveRun, reject) => {
    const t0 = performance.now();
    execFile(cmd, args, { cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}`));
      else resolveRun({ ms: performance.now() - t0, bytes: stdout.length });
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function run({ quick = false } = {}) {
  const jobs = summaries(1000);
  const app = createAdminApp({
    pollers: {
      list: async () => jobs,
      show: async () => jobs[0],
      run: async () => ({ status: 'ok', items_seen: 0, items_dispatched: 0 }),
      pause: async () => jobs[0],
      resume: async () => jobs[0],
      reset: async () => jobs[0],
    },
    reloadPollers: async () => ({ add: [], replace: [], remove: [], keep: [], rejected: [] }),
    reloadCredentials: async () => ({ channels: [], pollers: true }),
    logger: silentLogger,
  });
  const served = await serveAdmin(app, '127.0.0.1:0');
  const root = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  mkdirSync(join(root, 'config'));
  writeFileSync(join(root, 'config', 'runtime.yaml'), `admin:\n  listen: ${new URL(served.url).host}\n`);
  const hasCurl = spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0;
  const commands = {
    node: [process.execPath, ['-e', '0']],
    version: [process.execPath, [bin, '--version']],
    list: [process.execPath, [bin, 'pollers', 'list']],
    ...(hasCurl ? { curl: ['curl', ['-sf', `${served.url}/admin/pollers`]] } : {}),
  };
  const n = quick ? 3 : 10;
  try {
    for (const [cmd, args] of Object.values(commands)) await timed(cmd, args, root); // warm the disk cache
    const ms = Object.fromEntries(Object.keys(commands).map((k) => [k, []]));
    const ratios = { version: [], list: [], listCurl: [] };
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const round = {};
      for (const [name, [cmd, args]] of Object.entries(commands)) {
        const r = await timed(cmd, args, root);
        round[name] = r.ms;
        ms[name].push(r.ms);
        if (name === 'list') bytes = r.bytes;
      }
      ratios.version.push(round.version / round.node);
      ratios.list.push(round.list / round.node);
      if (hasCurl) ratios.listCurl.push(round.list / round.curl);
    }
    const med = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, median(v)]));
    return {
      n,
      ms: med,
      vsNode: { version: median(ratios.version), list: median(ratios.list) },
      vsCurl: hasCurl ? median(ratios.listCurl) : null,
      outputBytes: bytes,
    };
  } finally {
    await served.close();
    rmSync(root, { recursive: true, force: true });
  }
}

const row = (label, ms, note) =>
  console.log(`  ${label.padEnd(20)} ${ms.toFixed(0).padStart(4)} ms  ${note}`.trimEnd());
const verdict = (ratio, ok) => `${ratio.toFixed(1)}x ${ok ? 'OK' : 'MISSED'}`;

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run({ quick: process.argv.includes('--quick') });
  console.log(
    'cli: the `agent` bin against an admin server with 1,000 jobs, found through config/runtime.yaml (medians of %d rounds; ratios paired per round)',
    r.n,
  );
  row('node -e 0', r.ms.node, '(bare Node start, the yardstick)');
  row(
    'agent --version',
    r.ms.version,
    `${r.vsNode.version.toFixed(2)}x node  (the bin alone: no parser, no client)`,
  );
  row(
    'agent pollers list',
    r.ms.list,
    `${r.vsNode.list.toFixed(2)}x node  (${r.outputBytes} bytes of table)`,
  );
  const list = r.vsNode.list;
  console.log(
    `  target: agent pollers list <= ${NODE_TARGET}x node -e 0 -> ${verdict(list, list <= NODE_TARGET)}`,
  );
  if (r.vsCurl === null) console.log('  curl: skipped, curl is not installed; no ratio');
  else {
    row('curl', r.ms.curl, '');
    console.log(`  target: under ${CURL_TARGET}x curl -> ${verdict(r.vsCurl, r.vsCurl < CURL_TARGET)}`);
  }
}
