// The scrape of the poller's per-job series: CPU, bytes and lines of one `/metrics` body at 1,000 and
// 10,000 jobs, every job with one tick and every per-job series set (as after a first round of ticks).
// Four renderings in the same run:
//   before      prom-client's own Counter/Gauge/Histogram, 13 latency buckets (5 ms ... 60 s), registry.metrics()
//   prom-client the same, with today's 8 buckets: what the bucket choice alone saves
//   one string  createPollerMetrics (metrics-text families, 8 buckets) rendered whole by renderMetrics, then
//               encoded (with the poller's few series that are not per job: 17 lines more)
//   now         the same families as the daemon's /metrics sends them: renderMetricsChunks, 64 KB chunks
//               each encoded as it is made
// CPU is process CPU (GC threads included) for the render and its UTF-8 encoding, median of the scrapes
// after a warm-up. Target: at 10,000 jobs, <= 100 ms of CPU per scrape. This is the render alone, in a
// process holding nothing else: a daemon's scrape also writes the body to its socket and collects garbage in
// a larger heap, about twice this; `bench/scale.mjs` measures that one.
import v8 from 'node:v8';
import vm from 'node:vm';
import { renderMetrics, renderMetricsChunks } from '../packages/metrics-text/dist/index.js';
import { createPollerMetrics } from '../packages/poller-runtime/dist/index.js';
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
} from '../packages/poller-runtime/node_modules/prom-client/index.js';

const SIZES = process.argv.includes('--quick') ? [1000] : [1000, 10_000];
const SCRAPES = 7;
const TARGET_MS = 100;
const BEFORE_BUCKETS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000];
const NOW_BUCKETS = [10, 50, 100, 250, 1000, 2500, 10_000, 60_000];

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

/** The per-job series as prom-client's own classes made them before (same names and labels). */
function promClientSeries(registry, buckets) {
  const JOB = ['kind', 'agent', 'job_id'];
  const registers = [registry];
  const counter = (name, labelNames) => new Counter({ name, help: name, labelNames, registers });
  const gauge = (name) => new Gauge({ name, help: name, labelNames: ['job_id'], registers });
  const ticks = counter('poller_ticks_total', [...JOB, 'status']);
  const latency = new Histogram({
    name: 'poller_latency_ms',
    help: 'x',
    labelNames: JOB,
    buckets,
    registers,
  });
  const seen = counter('poller_items_seen_total', JOB);
  const dispatched = counter('poller_items_dispatched_total', JOB);
  const gauges = ['poller_consecutive_errors', 'poller_breaker_state', 'poller_paused'].map(gauge);
  const success = gauge('poller_last_success_timestamp_seconds');
  return (l, nowMs) => {
    ticks.inc({ ...l, status: 'ok' });
    latency.observe(l, 12);
    seen.inc(l, 0);
    dispatched.inc(l, 0);
    for (const g of gauges) g.set({ job_id: l.job_id }, 0);
    success.set({ job_id: l.job_id }, nowMs / 1000);
  };
}

/** The same through the runtime's own `createPollerMetrics`. */
function runtimeSeries(registry) {
  const m = createPollerMetrics(registry);
  return (l, nowMs) => {
    m.tick(l, 'ok', 12);
    m.itemsSeen(l, 0);
    m.itemsDispatched(l, 0);
    m.consecutiveErrors(l.job_id, 0);
    m.breakerState(l.job_id, 0);
    m.paused(l.job_id, false);
    m.lastSuccess(l.job_id, nowMs);
  };
}

function measure(jobs, makeSeries, render) {
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const registry = new Registry();
  const record = makeSeries(registry);
  const now = Date.now();
  for (let i = 0; i < jobs; i++) record({ kind: 'rss', agent: `agent-${i % 50}`, job_id: `feed-${i}` }, now);
  gc();
  const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
  return (async () => {
    const cpu = [];
    let bytes = 0;
    let lines = 0;
    for (let k = 0; k <= SCRAPES; k++) {
      const t = process.cpuUsage();
      const made = await render(registry);
      const used = process.cpuUsage(t);
      // Joined outside the measured CPU: the daemon sends its chunks as they are made.
      const body = Array.isArray(made)
        ? Buffer.concat(made)
        : Buffer.isBuffer(made)
          ? made
          : Buffer.from(made, 'utf8');
      if (k > 0) cpu.push((used.user + used.system) / 1000); // the first scrape warms up
      bytes = body.length;
      lines = body.toString('latin1').split('\n').length - 1;
    }
    cpu.sort((a, b) => a - b);
    return { cpuMs: cpu[cpu.length >> 1], maxMs: cpu[cpu.length - 1], bytes, lines, heapMb };
  })();
}

const variants = [
  ['before', (r) => promClientSeries(r, BEFORE_BUCKETS), (r) => r.metrics()],
  ['prom-client', (r) => promClientSeries(r, NOW_BUCKETS), (r) => r.metrics()],
  ['one string', runtimeSeries, async (r) => Buffer.from(await renderMetrics(r), 'utf8')],
  ['now', runtimeSeries, chunksOf],
];

/** What the daemon's `/metrics` sends: UTF-8 chunks, each made as the socket asks (kept here to count them). */
async function chunksOf(registry) {
  const chunks = [];
  for await (const chunk of renderMetricsChunks(registry)) chunks.push(chunk);
  return chunks;
}

console.log(`per-job poller series, one tick each; CPU: median (max) of ${SCRAPES} scrapes after a warm-up`);
for (const jobs of SIZES) {
  const results = {};
  for (const [name, makeSeries, render] of variants) {
    const r = (results[name] = await measure(jobs, makeSeries, render));
    console.log(
      `${String(jobs).padStart(6)} jobs  ${name.padEnd(11)} ${r.cpuMs.toFixed(1).padStart(6)} ms CPU (${r.maxMs.toFixed(0)})  ${(r.bytes / 1e6).toFixed(2).padStart(6)} MB  ${String(r.lines).padStart(7)} lines  series heap ${r.heapMb.toFixed(1)} MB`,
    );
  }
  const { before, now } = results;
  console.log(
    `${String(jobs).padStart(6)} jobs  now vs before: ${(before.cpuMs / now.cpuMs).toFixed(1)}x less CPU, ${(before.bytes / now.bytes).toFixed(2)}x fewer bytes, ${(before.lines / now.lines).toFixed(2)}x fewer lines`,
  );
  if (jobs === 10_000) {
    console.log(
      `  target: <= ${TARGET_MS} ms CPU per scrape at 10,000 jobs, the render alone -> ${now.cpuMs.toFixed(1)} ms ${now.cpuMs <= TARGET_MS ? 'OK' : 'MISSED'} (the whole daemon's scrape: bench/scale.mjs)`,
    );
  }
}
