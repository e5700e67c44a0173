// A daemon restarted after a crash takes over its own membership row; the leases its crashed incarnation
// held are then invisible to the other daemons' stale check, so the restarted daemon breaks them itself.
// Otherwise a job whose tick was in flight at the crash would wait out its lease TTL (48 h here).
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { sleep } from '@agent/timers';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFeedServer, pollersYaml, type FeedServer } from './cluster/workload.js';
import { baseConfig, daemonScope, runCli, SLOW_WATCHER, until, dropInboundStream } from './harness.js';

const scope = daemonScope();
afterAll(dropInboundStream);
let db: ScratchSchema;
let feed: FeedServer;
beforeEach(async () => {
  db = await scratchSchema('clr');
  feed = await createFeedServer({ jobs: 2, intervalMs: 1000 });
});
afterEach(async () => {
  await feed.close();
  await db.drop();
});

const clusterYaml = `daemon_id: host-a\npostgres:\n  url: \${DB_URL}\n  schema: \${DB_SCHEMA}\nheartbeat:\n  interval_secs: 1\n  stale_after_secs: 3\nclaim:\n  poll_max_ms: 200\n`;

describe('cluster mode: a daemon restarted after a crash', () => {
  it('breaks the leases its crashed incarnation held, long before their 48 h TTL', async () => {
    const w = scope.workdir({
      ...baseConfig({ broker: 'nats', runtime: SLOW_WATCHER }),
      'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
      // every_secs 1 x 172,800: a 48 h lease.
      'pollers.yaml': pollersYaml(feed, {
        agent: 'a',
        everySecs: 1,
        maxPerTick: 10,
        leaseTtlFactor: 172_800,
        deliver: { channel: 'log', to: 'op' },
      }),
      'cluster.yaml': clusterYaml.replace('${DB_URL}', db.url).replace('${DB_SCHEMA}', db.schema),
    });
    expect((await runCli(w, ['config', 'push', '--config-dir', 'config'])).code).toBe(0);
    const first = await scope.start(w);
    const t = `${db.schema}.poll_job`;
    const baselined = async () =>
      (await db.pool.query(`SELECT count(*)::int AS n FROM ${t} WHERE baselined`)).rows[0].n === 2;
    await until(baselined, 15_000, 'both jobs baselined');
    await first.stop('SIGKILL');
    // The tick of feed-0000 was in flight at the crash: the row says the dead incarnation holds it for 48 h.
    const { rows } = await db.pool.query(
      `SELECT daemon_id || '#' || incarnation AS holder FROM ${db.schema}.cluster_member WHERE daemon_id = 'host-a'`,
    );
    const dead = rows[0].holder as string;
    await db.pool.query(
      `UPDATE ${t} SET lease_holder = $1, lease_epoch = nextval('${db.schema}.poll_fence_seq'),
         lease_acquired_at = now(), lease_expires_at = now() + interval '48 hours' WHERE job_id = 'feed-0000'`,
      [dead],
    );
    // Restarted once its old row is stale (before that the id is refused as a duplicate).
    await sleep(3500);
    const second = await scope.start(w);
    const before = feed.requestsOf('feed-0000');
    await until(async () => feed.requestsOf('feed-0000') > before, 10_000, 'feed-0000 ticking again');
    const row = (await db.pool.query(`SELECT lease_holder FROM ${t} WHERE job_id = 'feed-0000'`)).rows[0];
    expect(row.lease_holder).not.toBe(dead);
    expect(await second.metric('poller_lease_takeovers_total', { job_id: 'feed-0000' })).toBe(1);
  }, 60_000);
});
