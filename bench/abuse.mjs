// Abusive inputs against a real daemon (the built `agent` bin): a 100k-item JSON response (`webhook_poll`), a
// 40k-item RSS feed, a 100k-deep JSON response, a gzip bomb and a double-gzip bomb, and a 100k-deep YAML file
// saved into the config dir. While each tick or reload runs, the bench polls `GET /admin/pollers` every 10 ms,
// reads the daemon's event-loop delay from its `/metrics` (`nodejs_eventloop_lag_p99_seconds` and `_max_`,
// whose histogram is reset at every scrape: one scrape before, one after) and samples `/proc/<pid>/status`
// VmRSS before, during and after.
// Targets: event-loop delay p99 < 50 ms; admin API answers within 100 ms during a 100k-item tick; RSS back
// within 20 MB of the baseline after it.
// A second part runs the same parses in this process with `--expose-gc`: the heap after a forced GC must come
// back to its baseline (nothing holds a response or a parsed tree once a tick is over).
// `--quick`: a shorter idle wait for RSS (30 s instead of 60 s). The feed server runs in a child process, so
// its CPU is not the daemon's. The machine's load average is printed: on a busy machine the OS delays the
// daemon too, which the event-loop figures cannot tell from its own work.
import { fork, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const HERE = dirname(fileURLToPath(import.meta.url));
const BIN = join(HERE, '..', 'apps', 'daemon', 'dist', 'bin.js');
const quick = process.argv.includes('--quick');
const JSON_ITEMS = 100_000;
const FEED_ITEMS = 40_000;
const DEEP = 100_000;
const NEW_PER_ROUND = 10;
const SETTLE_MS = quick ? 30_000 : 60_000;
const RSS_TARGET_MB = 20;
const MiB = 1024 * 1024;

// ---- the server (child process) ---------------------------------------------------------------------

function jsonBody(round, count) {
  // Oldest first, as `webhook_poll` reads a response; each round appends NEW_PER_ROUND newer items.
  const n = count + round * NEW_PER_ROUND;
  const items = [];
  for (let i = n - count; i < n; i++)
    items.push(`{"id":"evt-${i}","title":"Event ${i}","url":"https://example.org/e/${i}"}`);
  return `{"data":{"items":[${items.join(',')}]}}`;
}

function feedBody(round, count) {
  // Newest first, as feeds usually are.
  const n = count + round * NEW_PER_ROUND;
  const parts = [];
  for (let v = n; v > n - count; v--)
    parts.push(
      `<item><guid>post-${v}</guid><title>Post ${v}</title><link>https://example.org/p/${v}</link><pubDate>${new Date(Date.UTC(2026, 0, 1) + v * 1000).toUTCString()}</pubDate><description>Summary of post ${v}.</description></item>`,
    );
  return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Big feed</title><link>https://example.org/</link>${parts.join('')}</channel></rss>`;
}

async function gzipStream(total, chunk) {
  const z = zlib.createGzip({ level: 9 });
  const out = [];
  z.on('data', (c) => out.push(c));
  for (let written = 0; written < total; written += chunk.length) if (!z.write(chunk)) await once(z, 'drain');
  z.end();
  await once(z, 'end');
  return Buffer.concat(out);
}

async function serve() {
  // A bench that dies must not leave its server behind.
  process.on('disconnect', () => process.exit(0));
  let round = 0;
  // 1 GiB of zeros once gzipped (about 1 MiB), and that file gzipped again (a few KiB on the wire).
  const inner = await gzipStream(1024 * MiB, Buffer.alloc(MiB));
  const bomb = inner;
  const bomb2 = zlib.gzipSync(inner, { level: 9 });
  const deepJson = `{"items":[{"id":"x","v":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}]}`;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    // `?n=` sizes a response (the heap check warms up on small ones).
    const n = (full) => Number(url.searchParams.get('n') ?? full);
    if (path === '/advance') {
      round++;
      res.end('ok');
    } else if (path === '/items.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(jsonBody(round, n(JSON_ITEMS)));
    } else if (path === '/feed.xml') {
      res.writeHead(200, { 'content-type': 'application/rss+xml; charset=utf-8' });
      res.end(feedBody(round, n(FEED_ITEMS)));
    } else if (path === '/deep.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(deepJson);
    } else if (path === '/bomb.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(bomb);
    } else if (path === '/bomb2.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip, gzip' });
      res.end(bomb2);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () =>
    process.send({ port: server.address().port, bombBytes: bomb.length, bomb2Bytes: bomb2.length }),
  );
}

// ---- utilities ------------------------------------------------------------------------------------

const f = (x, w = 6) => (Number.isFinite(x) ? x.toFixed(0) : '-').padStart(w);
const verdict = (ok) => (ok ? 'OK' : 'MISSED');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function job(id, kind, config) {
  return `    - id: ${id}\n      kind: ${kind}\n      agent: a\n      schedule: { every_secs: 86400 }\n      paused_on_boot: true\n      config:\n${config}        allow_private_networks: true\n        max_body_bytes: ${50 * MiB}\n        timeout_ms: 120000\n        deliver: { channel: log, to: op }\n`;
}

function makeWorkdir(base) {
  const root = mkdtempSync(join(tmpdir(), 'bench-abuse-'));
  const dir = join(root, 'config');
  mkdirSync(join(dir, 'agents.d'), { recursive: true });
  mkdirSync(join(dir, 'plugins'));
  writeFileSync(
    join(dir, 'llm.yaml'),
    'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: bench-key-1234\n',
  );
  writeFileSync(join(dir, 'plugins', 'log.yaml'), 'instances:\n  default:\n    file: ./out.jsonl\n');
  writeFileSync(
    join(dir, 'runtime.yaml'),
    'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  debounce_ms: 60000\n  max_wait_ms: 60000\n',
  );
  writeFileSync(
    join(dir, 'agents.d', 'a.yaml'),
    'model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n',
  );
  const webhook = (id, path) =>
    job(
      id,
      'webhook_poll',
      `        url: ${base}${path}\n        items_path: data.items\n        id_field: id\n        message_template: "{title}"\n`,
    );
  writeFileSync(
    join(dir, 'pollers.yaml'),
    'pollers:\n  state_db: ./data/poller.db\n  jobs:\n' +
      webhook('json100k', '/items.json') +
      job('rss40k', 'rss', `        feed_url: ${base}/feed.xml\n        message_template: "{title}"\n`) +
      job(
        'deepjson',
        'webhook_poll',
        `        url: ${base}/deep.json\n        items_path: items\n        id_field: id\n        message_template: "{v}"\n`,
      ) +
      job(
        'bomb',
        'webhook_poll',
        `        url: ${base}/bomb.json\n        items_path: items\n        id_field: id\n        message_template: "{id}"\n`,
      ) +
      job(
        'bomb2',
        'webhook_poll',
        `        url: ${base}/bomb2.json\n        items_path: items\n        id_field: id\n        message_template: "{id}"\n`,
      ),
  );
  return { root, dir };
}

async function startDaemon(root) {
  const proc = spawn(process.execPath, [BIN, '--config-dir', 'config', '--log-level', 'info'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines = [];
  const started = await new Promise((resolve, reject) => {
    let buf = '';
    proc.stderr.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        if (line.includes('daemon started')) resolve(line);
      }
    });
    proc.once('exit', () => reject(new Error('daemon exited:\n' + lines.join('\n'))));
  });
  return {
    proc,
    lines,
    metricsUrl: /metrics_url=(\S+)/.exec(started)[1],
    adminUrl: /admin_url=(\S+)/.exec(started)[1],
  };
}

async function lag(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const read = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

/**
 * Runs `action` while polling the admin API every 10 ms and sampling RSS; the event-loop histogram is
 * reset by a scrape right before and read by one right after.
 */
async function observe(d, action) {
  const pid = d.proc.pid;
  await lag(d.metricsUrl); // resets the daemon's histogram
  const before = rssMb(pid);
  const state = { done: false };
  const latencies = [];
  let peak = before;
  const poller = (async () => {
    while (!state.done) {
      const t0 = performance.now();
      const r = await fetch(`${d.adminUrl}/admin/pollers`);
      await r.arrayBuffer();
      latencies.push(performance.now() - t0);
      peak = Math.max(peak, rssMb(pid));
      await sleep(10);
    }
  })();
  const t0 = performance.now();
  const result = await action();
  const ms = performance.now() - t0;
  state.done = true;
  await poller;
  const loop = await lag(d.metricsUrl);
  peak = Math.max(peak, rssMb(pid));
  return {
    result,
    ms,
    before,
    peak,
    loop,
    admin: { max: Math.max(...latencies), p99: pct(latencies, 99), n: latencies.length },
  };
}

/**
 * RSS once the daemon has been idle: V8 gives memory back through a GC its memory reducer starts some
 * seconds into idleness (without --expose-gc in the daemon nothing can force it). Waits until RSS has been
 * within the target of `baseline` for 2 s, or SETTLE_MS; returns the last RSS and when it came back.
 */
async function settledRss(pid, baseline) {
  const start = Date.now();
  let backAt = null;
  let last = rssMb(pid);
  while (Date.now() - start < SETTLE_MS) {
    await sleep(250);
    last = rssMb(pid);
    if (last > baseline + RSS_TARGET_MB) backAt = null;
    else if (backAt === null) backAt = Date.now() - start;
    else if (Date.now() - start - backAt >= 2000) break;
  }
  return { rss: last, backAfterMs: backAt };
}

/** The daemon's V8 heap (used, committed) and external memory, in MB, from its /metrics. */
async function heapOf(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const read = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]) / MiB;
  return {
    used: read('nodejs_heap_size_used_bytes'),
    total: read('nodejs_heap_size_total_bytes'),
    external: read('nodejs_external_memory_bytes'),
  };
}

function runCli(cwd, args) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c) => (stdout += c));
    p.stderr.on('data', (c) => (stderr += c));
    p.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

async function runJob(d, id) {
  const r = await fetch(`${d.adminUrl}/admin/pollers/${id}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  return r.json();
}

// ---- in-process heap check (--expose-gc) -----------------------------------------------------------

function heap() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed / MiB;
}

async function heapCheck(base) {
  const { webhookPollerKind } = await import('../packages/poller-kind-webhook/dist/index.js');
  const { rssPollerKind } = await import('../packages/poller-kind-rss/dist/index.js');
  const { createGuardedHttp } = await import('../packages/guarded-http/dist/index.js');
  const { silentLogger } = await import('../packages/log/dist/index.js');
  const http = createGuardedHttp({ logger: silentLogger });
  const tickOf = (kind, id, config) =>
    kind.tick({
      job: { id, agent: 'bench', kind: kind.kind },
      config: { max_per_tick: 10, allow_private_networks: true, max_body_bytes: 50 * MiB, ...config },
      cursor: null,
      shared: undefined,
      http: { request: (url, o) => http.request(url, { ...o, allowPrivateNetworks: true }) },
      signal: new AbortController().signal,
      logger: silentLogger,
      now: () => new Date(),
    });
  const webhook = (n) =>
    tickOf(webhookPollerKind, 'j', {
      url: `${base}/items.json?n=${n}`,
      method: 'GET',
      headers: {},
      items_path: 'data.items',
      id_field: 'id',
      message_template: '{title}',
    });
  const rss = (n) =>
    tickOf(rssPollerKind, 'r', { feed_url: `${base}/feed.xml?n=${n}`, message_template: '{title}' });
  // Warm on small responses (code compiled, pools allocated), then measure the big ones from there.
  for (let i = 0; i < 3; i++) {
    await webhook(2000);
    await rss(2000);
  }
  const rows = [];
  for (const [name, run, n] of [
    ['webhook_poll 100k items', webhook, JSON_ITEMS],
    ['rss 40k items', rss, FEED_ITEMS],
  ]) {
    const base0 = heap();
    // In a function of its own: the result must not stay behind in this frame's registers.
    const [items, held] = await (async () => {
      const result = await run(n);
      return [result.items.length, heap()];
    })();
    await new Promise((r) => setImmediate(r));
    const after = heap();
    rows.push({ name, base0, held, after, items });
  }
  await http.close();
  return rows;
}

// ---- main -------------------------------------------------------------------------------------------

async function main() {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const info = await new Promise((resolve) => child.once('message', resolve));
  const base = `http://127.0.0.1:${info.port}`;
  const advance = () => fetch(`${base}/advance`).then((r) => r.text());
  const { root, dir } = makeWorkdir(base);
  let d;
  // Interrupted (Ctrl-C, a closed pipe): the daemon and the server go too.
  process.once('exit', () => {
    d?.proc.kill('SIGKILL');
    child.kill('SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGPIPE']) process.once(sig, () => process.exit(130));
  try {
    d = await startDaemon(root);
    await sleep(1000);
    const rows = [];
    const scenario = async (name, action, { settle = false, advanceFirst = false } = {}) => {
      if (advanceFirst) await advance();
      const o = await observe(d, action);
      const settled = settle ? await settledRss(d.proc.pid, o.before) : null;
      rows.push({
        name,
        ...o,
        after: settled ? settled.rss : NaN,
        backAfterMs: settled ? settled.backAfterMs : null,
        heap: settle ? await heapOf(d.metricsUrl) : null,
      });
      const r = o.result;
      const what =
        r && typeof r === 'object' && 'status' in r
          ? `${r.status} seen=${r.items_seen} dispatched=${r.items_dispatched}${r.error ? ` error=${String(r.error).slice(0, 140)}` : ''}`
          : String(r).slice(0, 200);
      console.log(`  ${name}: ${what}`);
    };

    console.log(
      `load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(
          ' ',
        )}; daemon pid ${d.proc.pid}; server: ${JSON_ITEMS} JSON items, ${FEED_ITEMS} feed items, ${DEEP}-deep JSON and YAML, gzip bomb ${info.bombBytes} B on the wire (1 GiB decoded), double gzip ${info.bomb2Bytes} B`,
    );
    await scenario('json 100k, first tick (baseline)', () => runJob(d, 'json100k'), { settle: true });
    await scenario('json 100k, next tick (+10 new)', () => runJob(d, 'json100k'), {
      settle: true,
      advanceFirst: true,
    });
    await scenario('rss 40k, first tick (baseline)', () => runJob(d, 'rss40k'), { settle: true });
    await scenario('rss 40k, next tick (+10 new)', () => runJob(d, 'rss40k'), {
      settle: true,
      advanceFirst: true,
    });
    await scenario('json 100k-deep', () => runJob(d, 'deepjson'));
    await scenario('gzip bomb', () => runJob(d, 'bomb'));
    await scenario('double gzip bomb', () => runJob(d, 'bomb2'));
    const deepYaml = `model: ${'['.repeat(DEEP)}${']'.repeat(DEEP)}\n`;
    await scenario(
      'yaml 100k-deep, agent reload',
      async () => {
        writeFileSync(join(dir, 'agents.d', 'deep.yaml'), deepYaml);
        // Not spawnSync: this process polls the admin API meanwhile.
        const r = await runCli(root, ['reload', '--config-dir', 'config', '--json']);
        rmSync(join(dir, 'agents.d', 'deep.yaml'));
        try {
          const ack = JSON.parse(r.stdout);
          const why = ack.errors[0]?.reason ?? ack.rejected[0]?.reason ?? '';
          return `v${ack.version} elapsed=${ack.elapsed_ms}ms: ${why}`;
        } catch {
          return `exit ${r.status}: ${r.stderr.slice(0, 200)}`;
        }
      },
      { settle: true },
    );

    console.log(
      '\nfigures (loop = event-loop delay from the daemon, admin = GET /admin/pollers every 10 ms):',
    );
    console.log(
      `  ${'scenario'.padEnd(32)} ${'ms'.padStart(6)} ${'loop p99'.padStart(9)} ${'loop max'.padStart(9)} ${'admin p99'.padStart(10)} ${'admin max'.padStart(10)} ${'RSS before'.padStart(11)} ${'peak'.padStart(6)} ${'after'.padStart(6)} ${'back in'.padStart(8)}   heap used/committed, external after (MB)`,
    );
    for (const r of rows)
      console.log(
        `  ${r.name.padEnd(32)} ${f(r.ms)} ${f(r.loop.p99, 9)} ${f(r.loop.max, 9)} ${f(r.admin.p99, 10)} ${f(r.admin.max, 10)} ${f(r.before, 11)} ${f(r.peak)} ${f(r.after)} ${(r.backAfterMs === null ? (Number.isFinite(r.after) ? 'never' : '-') : `${(r.backAfterMs / 1000).toFixed(1)} s`).padStart(8)}${r.heap ? `   ${f(r.heap.used, 3)}/${f(r.heap.total, 3)}, ${f(r.heap.external, 3)}` : ''}`,
      );
    const worstLoop = Math.max(...rows.map((r) => r.loop.p99));
    const bigTicks = rows.filter((r) => r.name.startsWith('json 100k,'));
    const worstAdmin = Math.max(...bigTicks.map((r) => r.admin.max));
    const settled = rows.filter((r) => Number.isFinite(r.after));
    const worstRss = Math.max(...settled.map((r) => r.after - r.before));
    console.log(
      `  target: event-loop delay p99 < 50 ms in every scenario -> worst ${worstLoop.toFixed(0)} ms, ${(worstLoop / 50).toFixed(2)}x of target ${verdict(worstLoop < 50)}`,
    );
    console.log(
      `  target: admin API within 100 ms during a 100k-item tick -> worst ${worstAdmin.toFixed(0)} ms, ${(worstAdmin / 100).toFixed(2)}x of target ${verdict(worstAdmin < 100)}`,
    );
    const slowest = Math.max(...settled.map((r) => r.backAfterMs ?? Infinity));
    console.log(
      `  target: RSS back within ${RSS_TARGET_MB} MB of the baseline after the big ticks -> worst +${worstRss.toFixed(0)} MB after at most ${(SETTLE_MS / 1000).toFixed(0)} s idle (back in ${Number.isFinite(slowest) ? `${(slowest / 1000).toFixed(1)} s` : 'never'} at worst) ${verdict(worstRss < RSS_TARGET_MB)}`,
    );

    // In-process heap check, in a child with --expose-gc (so this process keeps its own flags).
    const heapRun = spawnSync(
      process.execPath,
      ['--expose-gc', fileURLToPath(import.meta.url), '--heap', base],
      { encoding: 'utf8' },
    );
    process.stdout.write(heapRun.stdout);
    if (heapRun.status !== 0) process.stderr.write(heapRun.stderr);
  } finally {
    d?.proc.kill('SIGTERM');
    if (d) await once(d.proc, 'exit');
    child.kill();
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv.includes('--serve')) await serve();
else if (process.argv.includes('--heap')) {
  const base = process.argv[process.argv.indexOf('--heap') + 1];
  const rows = await heapCheck(base);
  console.log(
    '\nheap in this process (--expose-gc, MiB after a forced GC): before the tick, result held, result dropped',
  );
  for (const r of rows)
    console.log(
      `  ${r.name.padEnd(24)} ${r.items} items returned: ${r.base0.toFixed(1)} -> ${r.held.toFixed(1)} -> ${r.after.toFixed(1)} (${(r.after - r.base0).toFixed(1)} MiB left)`,
    );
  const worst = Math.max(...rows.map((r) => r.after - r.base0));
  console.log(
    `  target: heap back within 5 MiB once the result is dropped -> +${worst.toFixed(1)} MiB ${worst < 5 ? 'OK' : 'MISSED'}`,
  );
} else await main();
