// Wall time of `agent pollers list` (the built bin) against an admin server with 1,000 jobs, versus curl of
// the same endpoint (target: under 3x curl). The admin server is a real createAdminApp served in-process.
import { execFile, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdminApp, serveAdmin } from '../packages/admin-api/dist/index.js';
import { silentLogger } from '../packages/log/dist/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'apps', 'daemon', 'dist', 'bin.js');

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

/** Runs a command without blocking this process (it serves the requests). Returns ms. */
function timed(cmd, args) {
  return new Promise((resolveRun, reject) => {
    const t0 = performance.now();
    execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
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
  const url = `${served.url}/admin/pollers`;
  const n = quick ? 3 : 10;
  try {
    await timed(process.execPath, [bin, 'pollers', 'list', '--admin-url', served.url]); // warm the disk cache
    const cli = [];
    let lines = 0;
    for (let i = 0; i < n; i++) {
      const r = await timed(process.execPath, [bin, 'pollers', 'list', '--admin-url', served.url]);
      cli.push(r.ms);
      lines = r.bytes;
    }
    const node = [];
    for (let i = 0; i < n; i++) node.push((await timed(process.execPath, ['-e', '0'])).ms);
    const hasCurl = spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0;
    const curl = [];
    if (hasCurl) for (let i = 0; i < n; i++) curl.push((await timed('curl', ['-sf', url])).ms);
    return {
      n,
      cli: median(cli),
      node: median(node),
      curl: hasCurl ? median(curl) : null,
      outputBytes: lines,
    };
  } finally {
    await served.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run({ quick: process.argv.includes('--quick') });
  console.log('cli: `agent pollers list` against an admin server with 1,000 jobs (median of %d runs)', r.n);
  console.log(`  agent pollers list   ${r.cli.toFixed(0)} ms  (${r.outputBytes} bytes of table)`);
  console.log(`  node -e 0            ${r.node.toFixed(0)} ms  (bare Node start, for scale)`);
  if (r.curl === null) console.log('  curl: skipped, curl is not installed; no ratio');
  else {
    const ratio = r.cli / r.curl;
    console.log(`  curl                 ${r.curl.toFixed(0)} ms`);
    console.log(`  target: under 3x curl -> ${ratio.toFixed(1)}x ${ratio < 3 ? 'OK' : 'MISSED'}`);
  }
}
