// What an operator sees of chat in a cluster, through real daemons on the real PostgreSQL and NATS JetStream:
// `agent cluster status` names the one daemon polling a chat_b bot and how the inbound partitions are
// spread, and follows the bot to another daemon when its owner stops.
import { createFakeTelegram, type FakeTelegram } from '@agent/channels/testing';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  baseConfig,
  daemonScope,
  dropInboundStream,
  runCli,
  SLOW_WATCHER,
  until,
  type DaemonProcess,
  type Workdir,
} from './harness.js';

const TOKEN = '123456:bot-token-chatstatus';
const PARTITIONS = 4;
const OWNER_TTL_SECS = 3;
const IDS = ['host-a', 'host-b'];
const scope = daemonScope();
afterAll(dropInboundStream);
let db: ScratchSchema;
let tg: FakeTelegram;
beforeEach(async () => {
  db = await scratchSchema('clcs');
  tg = await createFakeTelegram({ token: TOKEN });
});
afterEach(async () => {
  await tg.close();
  await db.drop();
});

const clusterYaml = (id: string) =>
  `daemon_id: ${id}\npostgres:\n  url: ${db.url}\n  schema: ${db.schema}\n  pool_max: 6\n` +
  `heartbeat:\n  interval_secs: 1\n  stale_after_secs: 3\n` +
  `chat:\n  partitions: ${PARTITIONS}\n  owner_ttl_secs: ${OWNER_TTL_SECS}\n  ack_wait_secs: 5\n`;

/** Host a holds the whole config (a chat_b agent on the Telegram fake); host b only its host-local files. */
function hosts(): Workdir[] {
  const full = baseConfig({ broker: 'nats', runtime: SLOW_WATCHER });
  return IDS.map((id, i) =>
    scope.workdir(
      i === 0
        ? {
            ...full,
            'plugins/chat_b.yaml': `instances:\n  main:\n    base_url: ${tg.baseUrl}\n    bot_token: "${TOKEN}"\n    poll_timeout_secs: 1\n`,
            'agents.d/a.yaml':
              'model:\n  provider: main\n  name: m1\nsystem_prompt: You are A.\ninbound_bindings:\n  - plugin: chat_b\n    instance: main\n',
            'cluster.yaml': clusterYaml(id),
          }
        : {
            'broker.yaml': full['broker.yaml']!,
            'runtime.yaml': SLOW_WATCHER,
            'cluster.yaml': clusterYaml(id),
          },
    ),
  );
}

const OWNER = /msg="channel owner acquired".* plugin=chat_b instance=main /;

interface StatusJson {
  members: { daemon_id: string; state: string; inbound_partitions: number | null }[];
  channel_owners: {
    plugin: string;
    instance: string;
    daemon_id: string;
    term: number;
    expires_in_ms: number;
  }[];
}

async function statusJson(w: Workdir, d: DaemonProcess): Promise<StatusJson> {
  const r = await runCli(w, ['cluster', 'status', '--json', '--admin-url', d.adminUrl]);
  expect(r.code, r.stdout + r.stderr).not.toBe(1);
  return JSON.parse(r.stdout) as StatusJson;
}

const partitionsOf = (s: StatusJson) =>
  Object.fromEntries(s.members.map((m) => [m.daemon_id, m.inbound_partitions]));

describe('cluster mode: who runs chat, as `agent cluster status` shows it', () => {
  it('names the one daemon polling the bot and the partitions each daemon runs, and follows the bot to the next owner', async () => {
    const ws = hosts();
    const pushed = await runCli(ws[0]!, ['config', 'push', '--config-dir', 'config']);
    expect(pushed.code, pushed.stderr).toBe(0);
    const ds: DaemonProcess[] = [];
    for (const w of ws) ds.push(await scope.start(w));
    await until(() => ds.some((d) => d.count(OWNER) > 0), 10_000, 'an owner of chat_b/main');
    const ownerAt = ds.findIndex((d) => d.count(OWNER) > 0);
    const owner = ds[ownerAt]!;
    const other = ds[1 - ownerAt]!;
    // The partitions spread evenly over the two daemons, as each daemon's own gauge says.
    const gauges = () =>
      Promise.all(ds.map(async (d) => (await d.metric('agent_inbound_partitions_owned')) ?? 0));
    await until(
      async () => (await gauges()).every((n) => n === PARTITIONS / 2),
      20_000,
      'two partitions each',
    );

    // Any daemon answers for the cluster: asked at the daemon that does not poll the bot.
    const s = await statusJson(ws[0]!, other);
    expect(s.channel_owners).toHaveLength(1);
    expect(s.channel_owners[0]).toMatchObject({
      plugin: 'chat_b',
      instance: 'main',
      daemon_id: IDS[ownerAt],
      term: 1,
    });
    expect(s.channel_owners[0]!.expires_in_ms).toBeGreaterThan(0);
    expect(s.channel_owners[0]!.expires_in_ms).toBeLessThanOrEqual(OWNER_TTL_SECS * 1000);
    const held = await gauges();
    expect(partitionsOf(s)).toEqual({ [IDS[0]!]: held[0], [IDS[1]!]: held[1] });
    expect(held.reduce((a, b) => a + b, 0)).toBe(PARTITIONS);
    for (const d of ds) expect(d.count(OWNER)).toBe(d === owner ? 1 : 0);

    const plain = await runCli(ws[1]!, ['cluster', 'status', '--admin-url', owner.adminUrl]);
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    const lines = plain.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/\bJOBS +PARTITIONS +TICKS\b/);
    expect(lines.slice(-2)).toEqual(['channel owners:', `  chat_b/main  ${IDS[ownerAt]}  term 1`]);

    // The owner stops: it gives the bot up at once, the other daemon takes it under the next term, and the
    // status shows the new owner and every partition on the daemon left.
    await owner.stop('SIGTERM');
    await other.waitFor(OWNER, (OWNER_TTL_SECS + 3) * 1000);
    let after: StatusJson | undefined;
    await until(
      async () => {
        after = await statusJson(ws[1 - ownerAt]!, other);
        return after.members.find((m) => m.daemon_id === IDS[1 - ownerAt])?.inbound_partitions === PARTITIONS;
      },
      20_000,
      'every partition on the daemon left',
    );
    expect(after!.channel_owners.map((o) => [`${o.plugin}/${o.instance}`, o.daemon_id, o.term])).toEqual([
      ['chat_b/main', IDS[1 - ownerAt], 2],
    ]);
    expect(after!.members.find((m) => m.daemon_id === IDS[ownerAt])).toMatchObject({
      state: 'left',
      inbound_partitions: 0,
    });
  });
});
