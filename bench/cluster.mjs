// Cluster mode at scale: N real `rss` jobs (`every_secs: 60`, default 5 s jitter, 50 agents) shared by D
// daemons over one PostgreSQL (a fresh schema, dropped at the end) and NATS, against a loopback feed server
// that answers 304 after its first answer. Over one measured window: CPU per daemon, the CPU of the
// PostgreSQL backends serving the daemons (and of every process of the server, for comparison), tick
// lateness (start minus slot, from `poller_tick_lateness_seconds`), and jobs per daemon (claimed ticks, from
// `poller_claims_total`) with their spread around the mean (target ±20 %).
// `node bench/cluster.mjs [--jobs 10000] [--daemons 3] [--interval 60] [--window 60] [--quick]
// [--profile DIR]` (build first). `--quick`: 600 jobs every 20 s. `--profile DIR`: the daemons run with
// `--cpu-prof` into DIR. PostgreSQL from `PG_URL` (default the local `test` database), NATS from `NATS_URL`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPool } from '../packages/pg/dist/index.js';
import {
  agentFiles,
  counterSum,
  DAEMON_BIN,
  rssPollersYaml,
  runtimeYaml,
  scrape,
  sleep,
  spawnDaemon,
  stopDaemon,
  writeFiles,
} from './lib/daemon.mjs';
import { startFeedServer } from './lib/feeds.mjs';
import { histogramAdd, histogramDiff, histogramOf, quantile, quantileBucket } from './lib/histogram.mjs';
import { cpuMs, cpuOfCommand, memMb } from './lib/procfs.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const quick = process.argv.includes('--quick');
const JOBS = Number(arg('jobs', quick ? '600' : '10000'));
const DAEMONS = Number(arg('daemons', '3'));
// One window of one interval by default: every job is due once in it, whatever the phase.
const INTERVAL_S = Number(arg('interval', quick ? '20' : '60'));
const WINDOW_S = Number(arg('window', String(INTERVAL_S)));
const PROFILE_DIR = arg('profile', null);
const PG_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const AGENTS = 50;
const SPREAD_TARGET = 0.2;
// The claim loop sleeps at most poll_max_ms (1 s) before it looks again: the lateness it is meant to add.
const LATENESS_TARGET_S = 1;

const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
const secs = (x) => (x === Infinity ? '> 300 s' : `${f2(x)} s`);

// ---- hosts: one config directory per daemon, the cluster-wide files on the first ------------------------

function writeHosts(dir, ids, schema, feedUrl) {
  return ids.map((id, i) => {
    const cwd = join(dir, `h${i}`);
    writeFiles(cwd, {
      'config/runtime.yaml': runtimeYaml(join(cwd, 'data')),
      'config/broker.yaml': `kind: nats\nurl: ${NATS_URL}\n`,
      'config/cluster.yaml': `daemon_id: ${id}\npostgres:\n  url: \${file:./pg.url}\n  schema: ${schema}\n`,
      'pg.url': PG_URL,
      ...(i === 0
        ? Object.fromEntries(
            Object.entries({
              ...agentFiles(AGENTS),
              'pollers.yaml': rssPollersYaml({ jobs: JOBS, everySecs: INTERVAL_S, agents: AGENTS, feedUrl }),
            }).map(([rel, text]) => [`config/${rel}`, text]),
          )
        : {}),
    });
    chmodSync(join(cwd, 'pg.url'), 0o600);
    return { id, cwd };
  });
}

/** `agent config push` on the first host: resolves with its exit code, output and duration. */
function push(cwd) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [DAEMON_BIN, 'config', 'push', '--config-dir', 'config'], { cwd });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.once('exit', (code) => resolve({ code, out: out.trim(), ms: performance.now() - t0 }));
  });
}

// ---- PostgreSQL CPU: the backends of the daemons, and every process of the server ------------------------

/** CPU ms of sampled processes between their first and last sample. */
const cpuBetweenSamples = (m) => [...m.values()].reduce((s, v) => s + v.last - v.first, 0);

/**
 * Every second: the CPU of the backends whose `application_name` is a daemon's (`agent <id>`) and of every
 * `postgres` process on this machine, and the backlog of the job table (due jobs no daemon claimed yet). A
 * process first seen after the first sample started in the window (counted from 0); one that ended counts
 * until its last sample (an idle session the pool closed spent nothing after it).
 */
function windowSampler(pool, ids, table) {
  const names = ids.map((id) => `agent ${id}`);
  const backends = new Map();
  const server = new Map();
  const backlog = { waiting: 0, oldestWaitS: 0 };
  let first = true;
  let timer = null;
  const note = (into, pid, cpu) => {
    const seen = into.get(pid);
    if (seen) seen.last = cpu;
    else into.set(pid, { first: first ? cpu : 0, last: cpu });
  };
  const sample = async () => {
    const { rows } = await pool.query('SELECT pid FROM pg_stat_activity WHERE application_name = ANY($1)', [
      names,
    ]);
    for (const { pid } of rows) {
      try {
        note(backends, pid, cpuMs(pid));
      } catch {
        // The session ended between the query and the read.
      }
    }
    for (const [pid, cpu] of cpuOfCommand('postgres')) note(server, pid, cpu);
    first = false;
    const waiting = (
      await pool.query(
        `SELECT count(*)::int AS n, extract(epoch FROM now() - min(next_run_at))::float AS oldest
         FROM ${table} WHERE due_at <= now() AND lease_holder IS NULL`,
      )
    ).rows[0];
    backlog.waiting = Math.max(backlog.waiting, waiting.n);
    backlog.oldestWaitS = Math.max(backlog.oldestWaitS, waiting.oldest ?? 0);
  };
  return {
    async start() {
      await sample();
      const loop = async () => {
        await sample().catch(() => {});
        if (timer) timer = setTimeout(loop, 1000);
      };
      timer = setTimeout(loop, 1000);
    },
    async stop() {
      clearTimeout(timer);
      timer = null;
      await sample();
      return {
        backendsMs: cpuBetweenSamples(backends),
        sessions: backends.size,
        serverMs: cpuBetweenSamples(server),
        backlog,
      };
    },
  };
}

// ---- one run --------------------------------------------------------------------------------------------

/** What the window is measured by, from one scrape of a daemon. */
function figuresOf(text) {
  return {
    claimed: counterSum(text, 'poller_claims_total', 'result="claimed"'),
    claimErrors: counterSum(text, 'poller_claims_total', 'result="error"'),
    ticks: counterSum(text, 'poller_ticks_total'),
    lateness: histogramOf(text, 'poller_tick_lateness_seconds'),
    claimLatency: histogramOf(text, 'poller_claim_latency_ms'),
  };
}

async function until(check, timeoutMs, what, daemons) {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    const dead = daemons.findIndex((d) => d.child.exitCode !== null || d.child.signalCode !== null);
    if (dead >= 0)
      throw new Error(
        `daemon ${dead} exited while waiting for ${what}:\n${daemons[dead].log.tail.join('\n')}`,
      );
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(500);
  }
}

async function measure({ pool, schema, hosts, daemons, firstSpawn }) {
  const table = `"${schema}".poll_job`;
  const baselined = async () =>
    (await pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE baselined`)).rows[0].n === JOBS;
  await until(baselined, 600_000, 'every job baselined', daemons);
  const baselinedS = (performance.now() - firstSpawn) / 1000;
  // A job's second run is the first point of its own grid (a per-job phase) at least half an interval after
  // its first: 1.5 intervals after the last baseline every job is due once per interval.
  await sleep(INTERVAL_S * 1500);

  const sampler = windowSampler(
    pool,
    hosts.map((h) => h.id),
    table,
  );
  const before = await Promise.all(daemons.map(async (d) => figuresOf(await scrape(d.started.metrics_url))));
  await sampler.start();
  const cpu0 = daemons.map((d) => cpuMs(d.child.pid));
  const logs0 = daemons.map((d) => ({ ...d.log }));
  const t0 = performance.now();
  await sleep(WINDOW_S * 1000);
  const cpu1 = daemons.map((d) => cpuMs(d.child.pid));
  const elapsedMs = performance.now() - t0;
  const sampled = await sampler.stop();
  const after = await Promise.all(daemons.map(async (d) => figuresOf(await scrape(d.started.metrics_url))));
  const dead = daemons.findIndex((d) => d.child.exitCode !== null || d.child.signalCode !== null);
  if (dead >= 0) throw new Error(`daemon ${hosts[dead].id} exited during the window`);
  const per = daemons.map((d, i) => ({
    id: hosts[i].id,
    readyMs: d.readyMs,
    cpuMs: cpu1[i] - cpu0[i],
    claimed: after[i].claimed - before[i].claimed,
    claimErrors: after[i].claimErrors - before[i].claimErrors,
    ticks: after[i].ticks - before[i].ticks,
    lateness: histogramDiff(after[i].lateness, before[i].lateness),
    claimLatency: histogramDiff(after[i].claimLatency, before[i].claimLatency),
    rssMb: memMb(d.child.pid, 'VmRSS'),
    warnings: d.log.warnings - logs0[i].warnings,
    errors: d.log.errors - logs0[i].errors,
  }));
  return { baselinedS, elapsedMs, per, pgCpu: sampled, backlog: sampled.backlog };
}

function report({ run, pushMs, readyAllMs, pgVersion }) {
  const { per, pgCpu, elapsedMs, backlog } = run;
  const pct = (ms) => (ms / elapsedMs) * 100;
  const claimed = per.reduce((s, d) => s + d.claimed, 0);
  const ticks = per.reduce((s, d) => s + d.ticks, 0);
  const mean = claimed / per.length;
  const spread = Math.max(...per.map((d) => Math.abs(d.claimed / mean - 1)));
  const lateness = histogramAdd(per.map((d) => d.lateness));
  const claimLatency = histogramAdd(per.map((d) => d.claimLatency));
  // Every job is due once per interval: a window of whole intervals sees each job that many times.
  const wholeIntervals = WINDOW_S % INTERVAL_S === 0;
  const expected = wholeIntervals ? (JOBS * WINDOW_S) / INTERVAL_S : NaN;
  const p99 = quantile(lateness, 0.99);
  const [p99lo, p99hi] = quantileBucket(lateness, 0.99);

  console.log(
    `push ${f0(pushMs)} ms; every daemon ready ${f0(readyAllMs)} ms after the first spawn; every job baselined ` +
      `${f1(run.baselinedS)} s after it; window ${f1(elapsedMs / 1000)} s`,
  );
  console.log(
    'daemon              ready ms   cpu %  cpu ms/tick  claimed   share  late p99 s  rss MB  warn/error lines',
  );
  for (const d of per)
    console.log(
      [
        d.id.padEnd(18),
        f0(d.readyMs).padStart(9),
        f2(pct(d.cpuMs)).padStart(7),
        f2(d.cpuMs / Math.max(1, d.ticks)).padStart(12),
        String(d.claimed).padStart(8),
        `${f1((d.claimed / mean - 1) * 100)}%`.padStart(7),
        f2(quantile(d.lateness, 0.99)).padStart(10),
        f0(d.rssMb).padStart(7),
        `${d.warnings}/${d.errors}`.padStart(17),
      ].join(' '),
    );
  const daemonsMs = per.reduce((s, d) => s + d.cpuMs, 0);
  console.log(
    `all daemons: ${f2(pct(daemonsMs))} % of a core, ${f2(daemonsMs / Math.max(1, ticks))} ms CPU per tick; ` +
      `${ticks} ticks${wholeIntervals ? ` (${expected} due in the window)` : ''}, ${claimed} claimed; claim errors ${per.reduce((s, d) => s + d.claimErrors, 0)}`,
  );
  console.log(
    `PostgreSQL ${pgVersion}: backends of the daemons ${f2(pct(pgCpu.backendsMs))} % of a core ` +
      `(${pgCpu.sessions} sessions seen), ${f2(pgCpu.backendsMs / Math.max(1, ticks))} ms CPU per tick; ` +
      `every postgres process of the server ${f2(pct(pgCpu.serverMs))} % (also other clients of this server)`,
  );
  console.log(
    `tick lateness (start minus slot, jitter included, database clock; ${lateness.count} ticks): ` +
      `p50 ${secs(quantile(lateness, 0.5))}, p99 ${secs(p99)} (in the ${p99lo}-${p99hi} s bucket), ` +
      `mean ${secs(lateness.sum / Math.max(1, lateness.count))}; claim statement p99 ${f0(quantile(claimLatency, 0.99))} ms`,
  );
  console.log(
    `backlog (sampled every second): at most ${backlog.waiting} due jobs not yet claimed, the oldest ` +
      `${f1(backlog.oldestWaitS)} s past its slot; the jobs' phases spread their slots over each interval ` +
      `(about ${f0(JOBS / INTERVAL_S)} due per second)`,
  );
  console.log(
    `jobs per daemon: ${per.map((d) => d.claimed).join(' / ')}, spread ±${f1(spread * 100)} % of the mean ` +
      `(target ±${SPREAD_TARGET * 100} %): ${spread <= SPREAD_TARGET ? 'met' : 'missed'}`,
  );
  console.log(
    `machine: ${availableParallelism()} cores shared by the daemons, PostgreSQL, NATS, the feed server and ` +
      `other work (load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')})`,
  );
  const misses = [];
  if (!(spread <= SPREAD_TARGET))
    misses.push(`jobs per daemon spread ±${f1(spread * 100)} % (target ±${SPREAD_TARGET * 100} %)`);
  if (!(p99 <= LATENESS_TARGET_S))
    misses.push(
      `tick lateness p99 ${secs(p99)} (target ≤ ${LATENESS_TARGET_S} s: the claim loop adds at most poll_max_ms)`,
    );
  if (wholeIntervals && ticks < expected * 0.95)
    misses.push(`${ticks} ticks in the window, ${expected} were due`);
  for (const m of misses) console.log(`target missed: ${m}`);
}

// ---- main -----------------------------------------------------------------------------------------------

const tag = randomBytes(4).toString('hex');
const schema = `bench_cluster_${tag}`;
const ids = Array.from({ length: DAEMONS }, (_, i) => `bench-${tag}-${i}`);
const dir = mkdtempSync(join(tmpdir(), 'cluster-bench-'));
const feeds = await startFeedServer();
const pool = createPool({ url: PG_URL, applicationName: 'bench cluster', max: 2 });
const daemons = [];
let failed = false;
console.log(
  `cluster mode: ${DAEMONS} daemons, ${JOBS} rss jobs every ${INTERVAL_S} s (5 s jitter), ${AGENTS} agents, ` +
    `304 feeds, one PostgreSQL, NATS; window ${WINDOW_S} s`,
);
try {
  const pgVersion = (await pool.query('SHOW server_version')).rows[0].server_version;
  await pool.query(`CREATE SCHEMA "${schema}"`);
  const hosts = writeHosts(dir, ids, schema, feeds.url);
  const pushed = await push(hosts[0].cwd);
  if (pushed.code !== 0) throw new Error(`agent config push exited with ${pushed.code}:\n${pushed.out}`);
  const firstSpawn = performance.now();
  const nodeArgs = PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  const settled = await Promise.allSettled(
    hosts.map((h) => spawnDaemon({ cwd: h.cwd, configDir: 'config', nodeArgs })),
  );
  for (const s of settled) if (s.status === 'fulfilled') daemons.push(s.value);
  const refused = settled.find((s) => s.status === 'rejected');
  if (refused) throw refused.reason;
  const readyAllMs = Math.max(...daemons.map((d) => d.spawnedAt + d.readyMs)) - firstSpawn;
  const run = await measure({ pool, schema, hosts, daemons, firstSpawn });
  report({ run, pushMs: pushed.ms, readyAllMs, pgVersion });
} catch (err) {
  failed = true;
  console.error(`cluster bench failed: ${err.stack ?? err}`);
} finally {
  await Promise.all(daemons.map((d) => stopDaemon(d)));
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((err) => {
    failed = true;
    console.error(`could not drop schema ${schema}: ${err.message}`);
  });
  await pool.end();
  feeds.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
