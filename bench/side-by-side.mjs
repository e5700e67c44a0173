// Two builds of the daemon measured at once, over the same windows: this checkout (B) and another built
// checkout (A, e.g. a worktree of the commit before a change), each with N real `rss` jobs against its own
// loopback feed server (304 after the first answer). The machine's speed moves both alike, so the ratio of
// their CPU per tick separates changes of a few per cent that runs one after the other cannot (the scale
// bench moves ±10 % between runs). Each round starts both, waits `--warm` seconds (past the baseline burst),
// then reads CPU, ticks and RSS over `--window` seconds; rounds alternate which build starts first.
// `node bench/side-by-side.mjs --other <checkout> [--jobs 10000] [--interval 60] [--warm 40] [--window 60] [--rounds 2]`
// (build both first).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  agentFiles,
  counterSum,
  root,
  rssPollersYaml,
  runtimeYaml,
  scrape,
  sleep,
  spawnDaemon,
  writeFiles,
} from './lib/daemon.mjs';
import { startFeedServer } from './lib/feeds.mjs';
import { cpuMs, memMb } from './lib/procfs.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const other = arg('other', undefined);
if (!other) {
  console.error('usage: node bench/side-by-side.mjs --other <built checkout> [--jobs N] [--rounds N]');
  process.exit(2);
}
const JOBS = Number(arg('jobs', '10000'));
const INTERVAL_S = Number(arg('interval', '60'));
const WARM_S = Number(arg('warm', '40'));
const WINDOW_S = Number(arg('window', '60'));
const ROUNDS = Number(arg('rounds', '2'));
const AGENTS = 50;

const builds = [
  { name: 'A (other)', bin: join(resolve(other), 'apps/daemon/dist/bin.js') },
  { name: 'B (this)', bin: join(root, 'apps/daemon/dist/bin.js') },
];

async function start(build) {
  const feeds = await startFeedServer();
  const dir = mkdtempSync(join(tmpdir(), 'side-by-side-'));
  writeFiles(dir, {
    'runtime.yaml': runtimeYaml(join(dir, 'data')),
    'broker.yaml': 'kind: local\n',
    ...agentFiles(AGENTS),
    'pollers.yaml': rssPollersYaml({
      jobs: JOBS,
      everySecs: INTERVAL_S,
      agents: AGENTS,
      feedUrl: feeds.url,
      stateDb: join(dir, 'data', 'poller.db'),
    }),
  });
  const daemon = await spawnDaemon({ cwd: dir, configDir: dir, bin: build.bin });
  return { build, feeds, dir, daemon, pid: daemon.child.pid, url: daemon.started.metrics_url };
}

async function stop(run) {
  run.daemon.child.kill('SIGTERM');
  await run.daemon.exited;
  run.feeds.stop();
  rmSync(run.dir, { recursive: true, force: true });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratios = [];
console.log(
  `side by side: ${JOBS} rss jobs every ${INTERVAL_S} s each; window ${WINDOW_S} s after ${WARM_S} s`,
);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? builds : builds.toReversed();
  const runs = [];
  for (const build of order) runs.push(await start(build));
  await sleep(WARM_S * 1000);
  const before = [];
  for (const r of runs)
    before.push({ ticks: counterSum(await scrape(r.url), 'poller_ticks_total'), cpu: cpuMs(r.pid) });
  const rss = runs.map(() => []);
  for (let s = 0; s < WINDOW_S; s++) {
    await sleep(1000);
    runs.forEach((r, i) => rss[i].push(memMb(r.pid, 'VmRSS')));
  }
  const figures = [];
  for (const [i, r] of runs.entries()) {
    const cpu = cpuMs(r.pid) - before[i].cpu;
    const ticks = counterSum(await scrape(r.url), 'poller_ticks_total') - before[i].ticks;
    figures.push({ name: r.build.name, perTick: cpu / Math.max(1, ticks), ticks, rss: median(rss[i]) });
  }
  for (const r of runs) await stop(r);
  const [a, b] = [figures.find((f) => f.name.startsWith('A')), figures.find((f) => f.name.startsWith('B'))];
  ratios.push(b.perTick / a.perTick);
  console.log(
    `round ${round + 1}: ` +
      figures
        .map(
          (f) =>
            `${f.name} ${f.perTick.toFixed(3)} ms/tick (${f.ticks} ticks), RSS median ${f.rss.toFixed(0)} MB`,
        )
        .join(' | ') +
      ` | B/A ${(b.perTick / a.perTick).toFixed(3)}`,
  );
}
console.log(`B/A CPU per tick: median ${median(ratios).toFixed(3)} over ${ROUNDS} rounds`);
