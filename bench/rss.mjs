// 1,000 RSS feeds on a loopback server (mostly 304, a few with new items each round): ticks per second and
// client CPU per tick through the rss kind and the poller runner, against a plain fetch-and-parse loop
// of the same feeds with the same parser (target: our CPU per tick under 1.3x the plain loop).
// The feed server runs in a child process, so the CPU figures are the polling side only.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// `--quick`: 300 feeds and one measured round.
const FEEDS = process.argv.includes('--quick') ? 300 : 1000;
const CONCURRENCY = 16;
const CHANGED_PER_ROUND = FEEDS / 20; // 5 % of the feeds get a new item each round

// ---- the feed server (child process) ----------------------------------------------------------------

function feedXml(i, version) {
  let items = '';
  for (let v = version; v > Math.max(0, version - 10); v--)
    items += `<item><guid>feed-${i}-post-${v}</guid><title>Post ${v} of feed ${i}</title><link>https://example.org/${i}/${v}</link><pubDate>${new Date(Date.UTC(2026, 0, 1, 0, v)).toUTCString()}</pubDate><description>Short summary of post ${v}, with a few words of text.</description></item>`;
  return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Feed ${i}</title><link>https://example.org/${i}/</link>${items}</channel></rss>`;
}

function serve() {
  const versions = Array.from({ length: FEEDS }, () => 1);
  let round = 0;
  const server = createServer((req, res) => {
    if (req.url === '/advance') {
      round++;
      for (let k = 0; k < CHANGED_PER_ROUND; k++) versions[(round * 37 + k * 20) % FEEDS]++;
      res.end('ok');
      return;
    }
    const i = Number(req.url.split('/')[2]);
    const etag = `"f${i}-v${versions[i]}"`;
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/rss+xml; charset=utf-8', etag });
    res.end(feedXml(i, versions[i]));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
}

// ---- the benchmark ----------------------------------------------------------------------------------

async function pool(n, worker) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await worker(next++);
    }),
  );
}

const sum = (xs, k) => xs.reduce((a, x) => a + x[k], 0);

async function measure(round) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const ticks = await round();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { ticks, ms, cpuUs: cpu.user + cpu.system };
}

async function main() {
  const quick = process.argv.includes('--quick');
  const rounds = quick ? 1 : 5;
  const { rssPollerKind } = await import('../packages/poller-kind-rss/dist/index.js');
  // The parser is not public API: the bench reads it from its built module.
  const { parseFeed } = await import('../packages/poller-kind-rss/dist/feed.js');
  const { createKindRegistry, createRunner } = await import('../packages/poller-runtime/dist/index.js');
  const { createMemoryStateStore, createTestSnapshot } =
    await import('../packages/poller-runtime/dist/testing.js');
  const { silentLogger } = await import('../packages/log/dist/index.js');
  const { createGuardedHttp } = await import('../packages/guarded-http/dist/index.js');
  // prom-client as poller-runtime resolves it (its metrics register on this registry).
  const requireFromCore = createRequire(new URL('../packages/poller-runtime/package.json', import.meta.url));
  const { Registry } = requireFromCore('prom-client');

  const child = fork(fileURLToPath(import.meta.url), ['--serve', ...process.argv.slice(2)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { port } = await new Promise((resolve) => child.once('message', resolve));
  const base = `http://127.0.0.1:${port}`;
  const advance = () => fetch(`${base}/advance`).then((r) => r.text());

  try {
    // Ours: the rss kind through the poller service (memory store, manual runs: no lease, no timers).
    let delivered = 0;
    const jobs = Array.from({ length: FEEDS }, (_, i) => ({
      id: `feed_${i}`,
      kind: 'rss',
      agent: 'bench',
      schedule: { every_secs: 300 },
      paused_on_boot: true, // the bench drives the ticks
      config: {
        feed_url: `${base}/feed/${i}`,
        message_template: '{title} {link}',
        deliver: { channel: 'log', to: 'bench' },
        allow_private_networks: true,
      },
    }));
    const store = createMemoryStateStore();
    const service = createRunner({
      snapshot: createTestSnapshot({ agents: { bench: { channels: ['log'] } }, jobs }),
      registry: createKindRegistry([rssPollerKind]),
      store,
      dispatcher: { deliver: async () => void delivered++ },
      metrics: new Registry(),
      logger: silentLogger,
      holderId: 'bench',
    });
    await service.start();
    if (service.rejected().length)
      throw new Error(`bench job rejected: ${JSON.stringify(service.rejected()[0])}`);
    const oursRound = async () => {
      await pool(FEEDS, async (i) => {
        const r = await service.run(`feed_${i}`);
        if (r.status !== 'ok') throw new Error(`feed_${i}: ${r.status} ${r.error ?? ''}`);
      });
      return FEEDS;
    };

    // The kind alone: its tick on the guarded client, cursors in a Map, dedup in a Set (no runner).
    const http = createGuardedHttp({ logger: silentLogger });
    const kindCursors = new Map();
    const kindSeen = new Set();
    const kindRound = async () => {
      await pool(FEEDS, async (i) => {
        const config = jobs[i].config;
        const r = await rssPollerKind.tick({
          job: { id: jobs[i].id, agent: 'bench', kind: 'rss' },
          config,
          cursor: kindCursors.get(i) ?? null,
          shared: undefined,
          http: { request: (url, o) => http.request(url, { ...o, allowPrivateNetworks: true }) },
          signal: new AbortController().signal,
          logger: silentLogger,
          now: () => new Date(),
        });
        for (const item of r.items) kindSeen.add(`${i}:${item.id}`);
        if (r.cursor !== undefined) kindCursors.set(i, r.cursor);
      });
      return FEEDS;
    };

    // Plain: fetch with If-None-Match, parse 200s with the same parser, dedup in a Set.
    const etags = new Map();
    const seen = new Set();
    let plainNew = 0;
    const plainRound = async () => {
      await pool(FEEDS, async (i) => {
        const url = `${base}/feed/${i}`;
        const etag = etags.get(i);
        const res = await fetch(url, { headers: etag ? { 'if-none-match': etag } : {} });
        const body = Buffer.from(await res.arrayBuffer());
        if (res.status === 304) return;
        etags.set(i, res.headers.get('etag'));
        const parsed = parseFeed(body, { contentType: res.headers.get('content-type'), baseUrl: url });
        if (!parsed.ok) throw new Error(`feed ${i}: ${parsed.code}`);
        for (const item of parsed.feed.items)
          if (!seen.has(`${i}:${item.id}`)) {
            seen.add(`${i}:${item.id}`);
            plainNew++;
          }
      });
      return FEEDS;
    };

    // Round 0 (baseline: every feed answers 200) and one warm-up round each, not measured.
    await oursRound();
    await plainRound();
    plainNew = 0; // the runner's first tick is a baseline that delivers nothing
    // The kind alone starts from the validators the runner stored (same server state), saving a round.
    for (let i = 0; i < FEEDS; i++) kindCursors.set(i, (await store.load(jobs[i].id)).cursor);
    await advance();
    // One unmeasured steady-state round each (mostly 304s), so every side is warm.
    await oursRound();
    await kindRound();
    await plainRound();

    const results = { ours: [], kind: [], plain: [] };
    const sides = { ours: oursRound, kind: kindRound, plain: plainRound };
    for (let r = 0; r < rounds; r++) {
      await advance();
      // Rotate the order, so no side always runs first after a change or on a warmer process.
      const order = ['ours', 'kind', 'plain'];
      for (let k = 0; k < r % 3; k++) order.push(order.shift());
      for (const name of order) results[name].push(await measure(sides[name]));
    }
    await http.close();
    await service.stop();

    const report = (name, xs) => {
      const ticks = sum(xs, 'ticks');
      const perSec = (ticks / sum(xs, 'ms')) * 1000;
      const cpuPerTick = sum(xs, 'cpuUs') / ticks;
      console.log(
        `${name.padEnd(22)} ${String(ticks).padStart(6)} ticks  ${perSec.toFixed(0).padStart(6)} ticks/s  ${cpuPerTick.toFixed(0).padStart(5)} µs CPU/tick`,
      );
      return { perSec, cpuPerTick };
    };
    console.log(
      `${FEEDS} feeds, ${rounds} measured rounds, ${CHANGED_PER_ROUND} feeds changed per round (the rest 304), concurrency ${CONCURRENCY}`,
    );
    const o = report('rss kind + runner', results.ours);
    const k = report('rss kind alone', results.kind);
    const p = report('plain fetch + parse', results.plain);
    const cpuRatio = o.cpuPerTick / p.cpuPerTick;
    console.log(
      `overhead vs plain: CPU/tick ${cpuRatio.toFixed(2)}x, time/tick ${(p.perSec / o.perSec).toFixed(2)}x (target CPU/tick < 1.3x): ${cpuRatio < 1.3 ? 'ok' : 'ABOVE TARGET'}`,
    );
    console.log(
      `  of which kind + guarded HTTP vs plain: ${(k.cpuPerTick / p.cpuPerTick).toFixed(2)}x CPU/tick; runner vs kind alone: ${(o.cpuPerTick / k.cpuPerTick).toFixed(2)}x`,
    );
    console.log(`items delivered by the runner: ${delivered}; new items seen by the plain loop: ${plainNew}`);
  } finally {
    child.kill();
  }
}

if (process.argv.includes('--serve')) serve();
else await main();
