// Poller jobs in cluster mode through real daemons on the real PostgreSQL and NATS: two daemons share one job
// table, every item reaches the channel once, and when one daemon is SIGKILLed the other takes its jobs over
// within the heartbeat window (not the lease TTL) and delivers what was published meanwhile.
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { sleep } from '@agent/timers';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFeedServer, pollersYaml, type FeedServer } from './cluster/workload.js';
import {
  baseConfig,
  daemonScope,
  loggedTexts,
  runCli,
  SLOW_WATCHER,
  until,
  type Workdir,
  dropInboundStream,
} from './harness.js';

const scope = daemonScope();
afterAll(dropInboundStream);
let db: ScratchSchema;
let feed: FeedServer;
beforeEach(async () => {
  db = await scratchSchema('clp');
  feed = await createFeedServer({ jobs: 6, intervalMs: 1000 });
});
afterEach(async () => {
  feed.stopPublishing();
  await feed.close();
  await db.drop();
});

const clusterYaml = (id: string) =>
  `daemon_id: ${id}\npostgres:\n  url: ${db.url}\n  schema: ${db.schema}\n  pool_max: 4\nheartbeat:\n  interval_secs: 1\n  stale_after_secs: 3\nclaim:\n  poll_max_ms: 200\n`;

function host(id: string, withFiles: boolean): Workdir {
  const full = baseConfig({ broker: 'nats', runtime: SLOW_WATCHER });
  const shared = {
    ...full,
    'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
    'pollers.yaml': pollersYaml(feed, {
      agent: 'a',
      everySecs: 1,
      maxPerTick: 10,
      deliver: { channel: 'log', to: 'op' },
    }),
  };
  const local = { 'broker.yaml': full['broker.yaml']!, 'runtime.yaml': SLOW_WATCHER };
  return scope.workdir({ ...(withFiles ? shared : local), 'cluster.yaml': clusterYaml(id) });
}

const counts = (ids: string[]) => {
  const m = new Map<string, number>();
  for (const id of ids) m.set(id, (m.get(id) ?? 0) + 1);
  return m;
};

describe('cluster mode: poller jobs shared by two daemons', () => {
  it("delivers each item once across the daemons, and a killed daemon's jobs go on elsewhere within the window", async () => {
    const a = host('host-a', true);
    const b = host('host-b', false);
    expect((await runCli(a, ['config', 'push', '--config-dir', 'config'])).code).toBe(0);
    const da = await scope.start(a);
    const dbb = await scope.start(b);
    // Every job has run once (its baseline) before anything is published.
    await until(
      async () =>
        (await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schema}.poll_job WHERE baselined`)).rows[0]
          .n === 6,
      15_000,
      'every job baselined',
    );
    feed.startPublishing();
    await sleep(5000);
    feed.stopPublishing();
    const first = feed.published.map((p) => p.itemId);
    await until(() => first.every((id) => loggedTexts(a, b).includes(id)), 15_000, 'every item delivered');
    const once = counts(loggedTexts(a, b));
    expect(
      [...once.values()].every((n) => n === 1),
      JSON.stringify([...once]),
    ).toBe(true);
    // Kill the daemon that delivered most (a claim takes up to 10 due jobs, so one daemon may hold them all).
    const aFirst = loggedTexts(a).length >= loggedTexts(b).length;
    const [victim, survivor, survivorDaemon] = aFirst ? [da, b, dbb] : [dbb, a, da];
    const victimId = aFirst ? 'host-a' : 'host-b';
    expect(loggedTexts(aFirst ? a : b).length).toBeGreaterThan(0);

    // SIGKILL it: it never leaves the membership table; the other sees it stale after 3 s and breaks its leases.
    await victim.stop('SIGKILL');
    const killedAt = Date.now();
    feed.startPublishing();
    await sleep(4000);
    feed.stopPublishing();
    const all = feed.published.map((p) => p.itemId);
    // Within 4 + 20 s of the kill: less than the 30 s lease TTL of these jobs, so the takeover came from the
    // stale heartbeat (3 s window), not from the leases running out.
    await until(
      () => all.every((id) => loggedTexts(a, b).includes(id)),
      20_000,
      'items published after the kill',
    );
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    const after = feed.published.filter((p) => p.publishedAt >= killedAt).map((p) => p.itemId);
    expect(after.every((id) => loggedTexts(survivor).includes(id))).toBe(true);
    // At most one repeat per job: the item in flight when the victim died.
    const repeats = [...counts(loggedTexts(a, b)).entries()].filter(([, n]) => n > 1);
    expect(repeats.length).toBeLessThanOrEqual(6);
    expect(repeats.every(([, n]) => n === 2)).toBe(true);
    const held = await runCli(survivor, [
      'cluster',
      'status',
      '--json',
      '--admin-url',
      survivorDaemon.adminUrl,
    ]);
    const view = JSON.parse(held.stdout);
    expect(view.members.find((m: { daemon_id: string }) => m.daemon_id === victimId).state).toBe('stale');
  }, 90_000);
});
