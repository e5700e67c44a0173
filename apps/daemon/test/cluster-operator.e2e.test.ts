// Operator commands on poller jobs in cluster mode through real daemons on the real PostgreSQL and NATS: a job
// made due on one daemon is ticked by another at once (the due hint on `agent.pollers.changed`), not at the
// end of that daemon's 30 s sleep, and a gracefully stopped daemon's in-flight job moves on the same way.
// Cut off from NATS, the daemon's commands still work and the others' own sleep bounds the delay. Either
// daemon lists every job of the cluster with the daemon holding it.
import { createServer, type Server } from 'node:http';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { sleep } from '@agent/timers';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PASS, RESET, startFaultProxy } from './cluster/fault-proxy.js';
import {
  baseConfig,
  daemonScope,
  loggedTexts,
  runCli,
  SLOW_WATCHER,
  until,
  type DaemonProcess,
  type Workdir,
  dropInboundStream,
} from './harness.js';

const scope = daemonScope();
afterAll(dropInboundStream);

/** Two JSON feeds: `news` answers with its items; `slow` holds every request open while `hold` is set. */
interface Feeds {
  url: string;
  news: { id: string }[];
  requests: { news: number; slow: number };
  hold: boolean;
  close(): Promise<void>;
}

async function startFeeds(): Promise<Feeds> {
  const feeds = { news: [{ id: 'n1' }], requests: { news: 0, slow: 0 }, hold: true } as Feeds;
  const server: Server = createServer((req, res) => {
    const name = req.url === '/slow' ? 'slow' : 'news';
    feeds.requests[name]++;
    if (name === 'slow' && feeds.hold) return;
    const items = name === 'news' ? feeds.news : [{ id: 's1' }];
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  feeds.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  feeds.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return feeds;
}

let db: ScratchSchema;
let feeds: Feeds;
beforeEach(async () => {
  db = await scratchSchema('clo');
  feeds = await startFeeds();
});
afterEach(async () => {
  await feeds.close();
  await db.drop();
});

const pollersYaml = (url: string) => {
  const job = (id: string) =>
    [
      `    - id: ${id}`,
      '      kind: webhook_poll',
      '      agent: a',
      '      schedule: { every_secs: 3600 }',
      '      config:',
      `        url: ${url}/${id}`,
      '        items_path: items',
      '        id_field: id',
      '        allow_private_networks: true',
      '        message_template: "{id}"',
      '        deliver: { channel: log, to: op }',
    ].join('\n');
  return `pollers:\n  default_jitter_ms: 0\n  jobs:\n${job('news')}\n${job('slow')}\n`;
};

/** Host A runs one tick at a time; both sleep up to `pollMaxMs` between claims. */
const clusterYaml = (id: string, maxTicks: number, pollMaxMs: number) =>
  `daemon_id: ${id}\npostgres:\n  url: ${db.url}\n  schema: ${db.schema}\n  pool_max: 4\nheartbeat:\n  interval_secs: 1\n  stale_after_secs: 3\nclaim:\n  poll_max_ms: ${pollMaxMs}\n  max_concurrent_ticks: ${maxTicks}\n`;

/** Host A holds the files and pushes them; host B only its host-local ones. */
function hosts(pollMaxMs: number, aNatsUrl?: string): { a: Workdir; b: Workdir } {
  const full = baseConfig({ broker: 'nats', runtime: SLOW_WATCHER });
  const aBroker = aNatsUrl ? `kind: nats\nurl: ${aNatsUrl}\n` : full['broker.yaml']!;
  const a = scope.workdir({
    ...full,
    'broker.yaml': aBroker,
    // Each host writes what it delivers to its own out.jsonl.
    'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
    'pollers.yaml': pollersYaml(feeds.url),
    'cluster.yaml': clusterYaml('host-a', 1, pollMaxMs),
  });
  const b = scope.workdir({
    'broker.yaml': full['broker.yaml']!,
    'runtime.yaml': SLOW_WATCHER,
    'cluster.yaml': clusterYaml('host-b', 64, pollMaxMs),
  });
  return { a, b };
}

const pollers = (w: Workdir, d: DaemonProcess, ...args: string[]) =>
  runCli(w, ['pollers', ...args, '--admin-url', d.adminUrl]);

const baselined = async (id: string) =>
  (await db.pool.query(`SELECT baselined FROM ${db.schema}.poll_job WHERE job_id = $1`, [id])).rows[0]
    ?.baselined === true;

/** Starts A, lets its one tick slot be taken by `slow` (whose feed holds the request), starts B, and waits for `news` to be baselined. */
async function twoDaemons(a: Workdir, b: Workdir) {
  expect((await runCli(a, ['config', 'push', '--config-dir', 'config'])).code).toBe(0);
  const da = await scope.start(a);
  await until(() => feeds.requests.slow === 1, 15_000, 'host-a ticking slow');
  const dbb = await scope.start(b);
  await until(() => baselined('news'), 15_000, 'news baselined');
  return { da, dbb };
}

/** `twoDaemons`, then news paused and its feed given a new item `n2`. */
async function twoDaemonsWithAFull(a: Workdir, b: Workdir) {
  const { da, dbb } = await twoDaemons(a, b);
  // Nothing is due before news's next run in an hour: B looks again only when its sleep ends or a hint comes.
  expect((await pollers(a, da, 'pause', 'news')).code).toBe(0);
  feeds.news.push({ id: 'n2' });
  return { da, dbb };
}

describe('cluster mode: due hints between daemons', () => {
  it('a job resumed on a daemon without free capacity is ticked by the other at once, and a stopped daemon hands its tick over', async () => {
    const { a, b } = hosts(30_000);
    const { da, dbb } = await twoDaemonsWithAFull(a, b);

    const asked = Date.now();
    const resumed = await pollers(a, da, 'resume', 'news');
    expect(resumed.code, resumed.stderr).toBe(0);
    // A has no free slot; B hears A's hint and delivers the new item, long before its 27-33 s sleep ends.
    await until(() => loggedTexts(b).includes('n2'), 10_000, 'n2 delivered by host-b');
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect(loggedTexts(a)).toEqual([]);
    expect(loggedTexts(b)).toEqual(['n2']);

    // A graceful stop aborts A's tick of slow and hands the lease back: B takes the job at once.
    feeds.hold = false;
    const stopping = Date.now();
    expect(await da.stop('SIGTERM')).toBe(0);
    await until(() => baselined('slow'), 10_000, 'slow ticked by host-b');
    expect(Date.now() - stopping).toBeLessThan(10_000);
    expect(feeds.requests.slow).toBe(2);
    expect(dbb.count(/level=error/)).toBe(0);
  }, 90_000);

  it("cut off from NATS, a daemon's resume still works, and the other daemon's own sleep bounds the delay", async () => {
    const target = new URL(process.env.NATS_URL ?? 'nats://127.0.0.1:4222');
    const proxy = await startFaultProxy({ target: { host: target.hostname, port: Number(target.port) } });
    try {
      const { a, b } = hosts(3000, `nats://127.0.0.1:${proxy.port}`);
      const { da, dbb } = await twoDaemonsWithAFull(a, b);
      proxy.setMode(RESET);
      await da.waitFor(/msg="broker disconnected from NATS"/, 15_000);

      const asked = Date.now();
      const resumed = await pollers(a, da, 'resume', 'news');
      expect(resumed.code, resumed.stderr).toBe(0);
      // No hint reaches B: it finds the job at its next look, at most 3.3 s (poll_max_ms + 10 %) away.
      await until(() => loggedTexts(b).includes('n2'), 10_000, 'n2 delivered by host-b');
      expect(Date.now() - asked).toBeLessThan(3300 + 3000);

      // Back on NATS, the hint buffered meanwhile may arrive late: it changes nothing.
      proxy.setMode(PASS);
      await da.waitFor(/msg="broker reconnected to NATS"/, 15_000);
      await sleep(500);
      expect(loggedTexts(b)).toEqual(['n2']);
      expect(loggedTexts(a)).toEqual([]);
      for (const d of [da, dbb]) expect(d.count(/level=error/)).toBe(0);
    } finally {
      await proxy.close();
    }
  }, 90_000);
});

describe('cluster mode: pollers list and show', () => {
  it('from either daemon list every job of the cluster with the daemon holding it, and show its lease', async () => {
    const { a, b } = hosts(1000);
    const { da, dbb } = await twoDaemons(a, b);
    for (const [w, d] of [
      [a, da],
      [b, dbb],
    ] as const) {
      const list = await pollers(w, d, 'list');
      expect(list.code, list.stderr).toBe(0);
      const lines = list.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID +KIND .* ERRORS +HOLDER$/);
      expect(lines.slice(1).map((l) => [l.split(/ +/)[0], l.split(/ +/).at(-1)])).toEqual([
        ['news', '-'],
        ['slow', 'host-a'],
      ]);
      const json = JSON.parse((await pollers(w, d, 'list', '--json')).stdout) as {
        jobs: { id: string; holder: string | null; lease_expires_at: string | null }[];
      };
      expect(json.jobs.map((j) => [j.id, j.holder?.split('#')[0] ?? null])).toEqual([
        ['news', null],
        ['slow', 'host-a'],
      ]);
      const slow = json.jobs[1]!;
      expect(Date.parse(slow.lease_expires_at!)).toBeGreaterThan(Date.now());
      const show = await pollers(w, d, 'show', 'slow');
      expect(show.code, show.stderr).toBe(0);
      expect(show.stdout).toMatch(
        new RegExp(
          `^lease holder: ${slow.holder} \\(epoch \\d+, expires \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ\\)$`,
          'm',
        ),
      );
    }
  }, 60_000);
});
