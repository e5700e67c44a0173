// 10,000 jobs of a no-op kind on one runner with the SQLite store: CPU share, RSS, tick lateness and SQLite
// writes per second. Targets: under 5 % of one core, under 200 MB RSS, p99 lateness under 50 ms beyond jitter.
// Jobs fire every 60 s, spread over the minute (cron "<s> * * * * *", no jitter) so that lateness is exact.
// Default: 10,000 jobs measured over 2 minutes after a warm-up minute; --quick: 2,000 jobs, one minute.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../packages/config-snapshot/dist/index.js';
import { silentLogger } from '../packages/log/dist/index.js';
import { definePollerKind, withBaseConfig } from '../packages/poller-core/dist/index.js';
import { createKindRegistry, createPollerService } from '../packages/poller-core/dist/runtime.js';
import { createSqliteStateStore } from '../packages/poller-core/dist/sqlite.js';
import { Registry } from '../packages/poller-core/node_modules/prom-client/index.js';

const quick = process.argv.includes('--quick');
const JOBS = quick ? 2000 : 10_000;
const WARMUP_MS = quick ? 20_000 : 60_000;
const MEASURE_MS = quick ? 40_000 : 120_000;

const lateness = [];
let measuring = false;
const noop = definePollerKind({
  kind: 'noop',
  apiVersion: 1,
  configSchema: withBaseConfig({
    type: 'object',
    additionalProperties: false,
    properties: { second: { type: 'integer' } },
  }),
  placeholders: [],
  async tick(ctx) {
    if (measuring) {
      const now = ctx.now().getTime();
      // The nominal fire time: the last instant at or before now whose second is this job's second.
      let nominal = Math.floor(now / 1000) * 1000;
      while (new Date(nominal).getUTCSeconds() !== ctx.config.second) nominal -= 1000;
      lateness.push(now - nominal);
    }
    return { items: [] };
  },
});

const root = mkdtempSync(join(tmpdir(), 'bench-sched-'));
const config = join(root, 'config');
mkdirSync(join(config, 'agents.d'), { recursive: true });
mkdirSync(join(config, 'plugins'));
writeFileSync(
  join(config, 'llm.yaml'),
  'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: bench-key-1234\n',
);
writeFileSync(join(config, 'plugins', 'log.yaml'), 'instances:\n  default: {}\n');
writeFileSync(
  join(config, 'agents.d', 'a.yaml'),
  'model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n',
);
const jobs = [];
for (let i = 0; i < JOBS; i++) {
  const s = i % 60;
  jobs.push(
    `    - id: job-${i}\n      kind: noop\n      agent: a\n      schedule: { cron: "${s} * * * * *", stagger_jitter_ms: 0 }\n      config: { second: ${s}, message_template: "x", deliver: { channel: log, to: op } }\n`,
  );
}
writeFileSync(
  join(config, 'pollers.yaml'),
  `pollers:\n  state_db: ${join(root, 'poller.db')}\n  default_jitter_ms: 0\n  jobs:\n${jobs.join('')}`,
);
const t0 = performance.now();
const loaded = loadConfig(config, { cwd: root, env: {} });
const loadMs = performance.now() - t0;
if (!loaded.snapshot || loaded.snapshot.pollers.jobs.length !== JOBS)
  throw new Error(
    'bench config invalid: ' +
      loaded.errors
        .slice(0, 3)
        .map((e) => e.message)
        .join('; '),
  );

// Count every SQLite write the runner makes.
const WRITES = new Set([
  'init',
  'commit',
  'deleteJob',
  'acquireLease',
  'renewLease',
  'releaseLease',
  'revokeLease',
]);
let writes = 0;
const real = createSqliteStateStore(join(root, 'poller.db'));
const store = new Proxy(real, {
  get(target, prop) {
    const v = target[prop];
    if (typeof v !== 'function') return v;
    return (...args) => {
      if (measuring && WRITES.has(prop)) writes++;
      return v.apply(target, args);
    };
  },
});

const registry = createKindRegistry();
registry.register(noop);
const service = createPollerService({
  snapshot: loaded.snapshot,
  registry,
  store,
  dispatcher: { deliver: async () => {} },
  metrics: new Registry(),
  logger: silentLogger,
  holderId: 'bench',
});
const startT = performance.now();
await service.start();
const startMs = performance.now() - startT;
const keepAlive = setInterval(() => {}, 1000);
await new Promise((r) => setTimeout(r, WARMUP_MS));
measuring = true;
const cpu0 = process.cpuUsage();
const w0 = performance.now();
let rssMax = 0;
const rssTimer = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage().rss)), 1000);
await new Promise((r) => setTimeout(r, MEASURE_MS));
measuring = false;
const cpu = process.cpuUsage(cpu0);
const wall = performance.now() - w0;
clearInterval(rssTimer);
clearInterval(keepAlive);
await service.stop();
await real.close();
rmSync(root, { recursive: true, force: true });

const sorted = [...lateness].sort((a, b) => a - b);
const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
const cpuShare = ((cpu.user + cpu.system) / 1000 / wall) * 100;
const rssMb = rssMax / 1024 / 1024;
console.log(`scheduler: ${JOBS} jobs of a no-op kind, one tick per job per minute, SQLite store`);
console.log(`  load ${JOBS} jobs: ${loadMs.toFixed(0)} ms; service start: ${startMs.toFixed(0)} ms`);
console.log(
  `  measured ${(wall / 1000).toFixed(0)} s: ${lateness.length} ticks, CPU ${cpuShare.toFixed(2)} % of one core, RSS max ${rssMb.toFixed(0)} MB`,
);
console.log(
  `  tick lateness p50=${pct(0.5).toFixed(1)} ms p99=${pct(0.99).toFixed(1)} ms; SQLite writes ${(writes / (wall / 1000)).toFixed(0)}/s`,
);
console.log(
  `  target: CPU < 5 % -> ${cpuShare.toFixed(2)} % ${cpuShare < 5 ? 'OK' : 'MISSED'}; RSS < 200 MB -> ${rssMb.toFixed(0)} MB ${rssMb < 200 ? 'OK' : 'MISSED'}; p99 lateness < 50 ms -> ${pct(0.99).toFixed(1)} ms ${pct(0.99) < 50 ? 'OK' : 'MISSED'}`,
);
