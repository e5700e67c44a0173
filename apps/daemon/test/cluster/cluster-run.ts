// The fault run of cluster mode end to end: throwaway PostgreSQL and NATS, three daemons in cluster mode each
// behind a fault proxy per link, the feed workload delivered to the recording Telegram sink (and, with
// `chat`, numbered messages from 20 chats to the same bot, answered through a fake model), a seeded nemesis,
// then a heal, a quiet period, and the history checker over everything that was recorded.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { sleep } from '@agent/timers';
import { writeArtifacts } from './artifacts.js';
import { buildChatHistory, pollerAt, pollerSpans } from './chat-history.js';
import {
  chatMessageText,
  createChatDriver,
  createChatModel,
  parseAnswerText,
  type ChatDriver,
  type ChatModel,
} from './chat-workload.js';
import { checkHistory, formatReport, type CheckParams, type CheckResult } from './checker.js';
import { createClusterDaemon, type ClusterDaemon } from './cluster-daemon.js';
import { CHAT_MEMORY_MESSAGES, operatorFiles, type ClusterTiming } from './cluster-files.js';
import { redeliveryWindowMs } from './checks-chat.js';
import { startDbObserver, type DbObserver } from './db-observer.js';
import { buildHistory, parseDaemonLog, type ReloadProbe, type SkewProbe } from './history.js';
import { describeSchedule, nemesisSchedule, type FaultEvent, type FaultKind } from './nemesis.js';
import { healAll, runNemesis, type AppliedFault } from './nemesis-run.js';
import { measuredSkew, pushConfig, reloadInPartition, type ProbeContext } from './probes.js';
import { startNats, startPostgres, type NatsServer, type PgServer } from './servers.js';
import {
  createFeedServer,
  createRecordingSink,
  pollersYaml,
  type FeedServer,
  type RecordingSink,
} from './workload.js';

export interface ClusterRunOptions {
  seed: number;
  /** How long the nemesis plays; faults start and heal within it. */
  nemesisMs: number;
  jobs?: number;
  daemons?: number;
  kinds?: readonly FaultKind[];
  /** Time between fault starts; default the nemesis's (8-15 s). */
  gapMs?: readonly [number, number];
  /** How long a skewed daemon keeps its skewed clock; default the nemesis's (20 s). */
  skewHoldMs?: number;
  log?: (line: string) => void;
  /** Where to write the history, the logs and the report; `onlyOnFail`: only when the verdict is FAIL. */
  artifacts?: { dir: string; onlyOnFail?: boolean };
  /**
   * Runs the chat workload beside the pollers' (checked by C1-C7): 20 chats on the bot, one message a second
   * in all, answered through a fake model. Kills, pauses and database partitions then hit the daemon polling
   * the bot.
   */
  chat?: boolean;
}

export interface ClusterRunResult {
  seed: number;
  schedule: FaultEvent[];
  faults: AppliedFault[];
  result: CheckResult;
  /** The schedule, the probes and the checker's verdict, as printed. */
  report: string;
}

/** Every item's text is its id; the feed publishes one per job per second; ticks every second. */
const INTERVAL_MS = 1000;
/** `every_secs: 1` x 172,800: the lease TTL is 48 h, so every takeover comes from the heartbeat window. */
const LEASE_TTL_FACTOR = 172_800;
const TIMING: ClusterTiming = { heartbeatIntervalSecs: 1, staleAfterSecs: 3, pollMaxMs: 500 };
/** Spreads the jobs' phases over the second, so that a fault finds ticks in flight at any moment. */
const JITTER_MS = 500;
/** Each feed answer takes this long: a tick spends most of its time waiting on its source. */
const FEED_DELAY_MS = 400;
const SCHEMA = 'agent';
const CHAT = '4242';
/** The chat workload: 20 chats, one message a second in all, each turn 300 ms on the model. */
const CHATS = 20;
const CHAT_INTERVAL_MS = 1000;
const MODEL_DELAY_MS = 300;
const CHAT_TIMING = { partitions: 8, ownerTtlSecs: 6, ackWaitSecs: 10 };
const BOT = { plugin: 'chat_b', instance: 'main' };
/** With chat, these faults hit whichever daemon polls the bot when they start. */
const AIMED: ReadonlySet<FaultKind> = new Set(['kill', 'pause', 'partition-db']);

export const CHECK_PARAMS: CheckParams = {
  intervalMs: INTERVAL_MS,
  jitterMs: JITTER_MS,
  ttlMs: LEASE_TTL_FACTOR * INTERVAL_MS,
  heartbeatWindowMs: TIMING.staleAfterSecs * 1000,
  chat: {
    ownerTtlMs: CHAT_TIMING.ownerTtlSecs * 1000,
    ackWaitMs: CHAT_TIMING.ackWaitSecs * 1000,
    historyLimit: CHAT_MEMORY_MESSAGES,
  },
};

/** The operator's and the harness's link to a server: straight, no proxy. */
const direct = (port: number) => ({ host: '127.0.0.1', port });

const agentYaml = (sink: RecordingSink) => (revision: number) =>
  sink.agentYaml().replace('system_prompt: harness', `system_prompt: harness revision ${revision}`);

function writeTree(root: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    const p = join(root, 'config', rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
}

async function until(what: string, ms: number, cond: () => Promise<boolean> | boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`fault run: timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** Everything a run starts, so that a failure anywhere tears it all down. */
interface Rig {
  pg?: PgServer;
  nats?: NatsServer;
  observer?: DbObserver;
  feed?: FeedServer;
  sink?: RecordingSink;
  model?: ChatModel;
  driver?: ChatDriver;
  daemons: ClusterDaemon[];
  operatorRoot?: string;
}

async function teardown(rig: Rig): Promise<void> {
  rig.feed?.stopPublishing();
  rig.driver?.stopSending();
  for (const d of rig.daemons) await d.close().catch(() => {});
  await rig.observer?.close().catch(() => {});
  await rig.feed?.close().catch(() => {});
  await rig.sink?.close().catch(() => {});
  await rig.model?.close().catch(() => {});
  await rig.nats?.stop().catch(() => {});
  await rig.pg?.stop().catch(() => {});
  if (rig.operatorRoot) rmSync(rig.operatorRoot, { recursive: true, force: true });
}

/** Servers, observer, workload, the operator's push, and the daemons, started and baselined. */
async function setUp(rig: Rig, o: ClusterRunOptions, log: (l: string) => void): Promise<void> {
  const pg = (rig.pg = await startPostgres());
  const nats = (rig.nats = await startNats());
  log(`fault run: PostgreSQL on port ${pg.port}, NATS on port ${nats.port}`);
  rig.observer = await startDbObserver({
    url: pg.url,
    schema: SCHEMA,
    staleAfterMs: TIMING.staleAfterSecs * 1000,
  });
  const feed = (rig.feed = await createFeedServer({
    jobs: o.jobs ?? 12,
    intervalMs: INTERVAL_MS,
    responseDelayMs: FEED_DELAY_MS,
  }));
  const sink = (rig.sink = await createRecordingSink());
  const timing: ClusterTiming = o.chat ? { ...TIMING, chat: CHAT_TIMING } : TIMING;
  if (o.chat) {
    rig.model = await createChatModel({ delayMs: MODEL_DELAY_MS });
    rig.driver = createChatDriver({
      telegram: sink.telegram,
      chats: CHATS,
      intervalMs: CHAT_INTERVAL_MS,
      seed: o.seed,
    });
  }
  rig.operatorRoot = mkdtempSync(join(tmpdir(), 'agent-fault-operator-'));
  writeTree(
    rig.operatorRoot,
    operatorFiles({
      pg: direct(pg.port),
      nats: direct(nats.port),
      schema: SCHEMA,
      timing,
      ...(rig.model ? { modelBaseUrl: rig.model.baseUrl } : {}),
      workload: {
        'pollers.yaml': pollersYaml(feed, {
          agent: 'a',
          everySecs: INTERVAL_MS / 1000,
          maxPerTick: 50,
          jitterMs: JITTER_MS,
          leaseTtlFactor: LEASE_TTL_FACTOR,
          deliver: { channel: 'chat_b', to: CHAT },
        }),
        'plugins/chat_b.yaml': sink.pluginYaml(),
        'agents.d/a.yaml': agentYaml(sink)(1),
      },
    }),
  );
  log(`fault run: config v${await pushConfig(rig.operatorRoot)} pushed`);
  for (let i = 0; i < (o.daemons ?? 3); i++)
    rig.daemons.push(
      await createClusterDaemon({
        id: `d${i}`,
        pg: direct(pg.port),
        nats: direct(nats.port),
        schema: SCHEMA,
        timing,
      }),
    );
  await Promise.all(rig.daemons.map((d) => d.start()));
  const observer = rig.observer;
  await until(
    'every job to record its baseline',
    60_000,
    async () => (await observer.baselined()) === feed.jobIds.length,
  );
  log(`fault run: ${rig.daemons.length} daemons up, ${feed.jobIds.length} jobs baselined`);
}

/** The daemon running the bot's poll loop now, by its logs. */
function botPoller(rig: Rig): number | undefined {
  const spans = pollerSpans(
    rig.daemons.flatMap((d) => parseDaemonLog(d.id, d.lines).records),
    [],
    BOT,
  );
  const id = pollerAt(spans, Date.now());
  const i = rig.daemons.findIndex((d) => d.id === id);
  return i < 0 ? undefined : i;
}

/** Plays the schedule with the probes hooked in; returns what was applied and what the probes saw. */
async function playNemesis(rig: Rig, schedule: FaultEvent[], log: (l: string) => void, chat: boolean) {
  const reloads: ReloadProbe[] = [];
  const skews: SkewProbe[] = [];
  const pending: Promise<void>[] = [];
  const ctx: ProbeContext = {
    operatorRoot: rig.operatorRoot!,
    observer: rig.observer!,
    agentYaml: agentYaml(rig.sink!),
    log,
  };
  const byId = new Map(rig.daemons.map((d) => [d.id, d]));
  const faults = await runNemesis(
    schedule,
    { daemons: rig.daemons, db: rig.pg! },
    {
      log,
      // With chat, kills, pauses and database partitions hit the bot's poller: each is an owner failover.
      ...(chat ? { aim: (e: FaultEvent) => (AIMED.has(e.kind) ? botPoller(rig) : undefined) } : {}),
      async onFaultStarted(e, handle) {
        const d = handle === undefined ? undefined : byId.get(handle.id);
        if (d === undefined) return;
        if (e.kind === 'partition-nats') {
          const { probe, done } = await reloadInPartition(ctx, d, reloads.length + 2);
          reloads.push(probe);
          pending.push(done);
        } else if (e.kind === 'skew') {
          const probe = await measuredSkew(d, e.skewSecs ?? 0);
          log(`probe: ${d.id} under ${e.skewSecs} s measures a skew of ${probe.measuredSecs ?? 'nothing'} s`);
          skews.push(probe);
        }
      },
    },
  );
  await healAll({ daemons: rig.daemons, db: rig.pg! });
  return { faults, reloads, skews, pending };
}

/** Runs the whole fault test and checks its history. Throws only when the rig cannot be set up. */
export async function runClusterFaults(o: ClusterRunOptions): Promise<ClusterRunResult> {
  const log = o.log ?? (() => {});
  const rig: Rig = { daemons: [] };
  const schedule = nemesisSchedule({
    seed: o.seed,
    runMs: o.nemesisMs,
    daemons: o.daemons ?? 3,
    ttlMs: CHECK_PARAMS.heartbeatWindowMs,
    ...(o.kinds ? { kinds: o.kinds } : {}),
    ...(o.gapMs ? { gapMs: o.gapMs } : {}),
    ...(o.skewHoldMs !== undefined ? { skewHoldMs: o.skewHoldMs } : {}),
  });
  log(describeSchedule(o.seed, schedule));
  try {
    await setUp(rig, o, log);
    const feed = rig.feed!;
    feed.startPublishing();
    rig.driver?.startSending();
    const played = await playNemesis(rig, schedule, log, o.chat === true);
    const quietFrom = Date.now();
    feed.stopPublishing();
    rig.driver?.stopSending();
    log('fault run: healed; waiting for quiet');
    await quiet(rig);
    await Promise.all(played.pending);
    const endedAt = Date.now();
    const observer = rig.observer!;
    await observer.stop();
    const logs = rig.daemons.flatMap((d) => parseDaemonLog(d.id, d.lines).records);
    const chat =
      rig.driver && rig.model
        ? buildChatHistory({
            chats: rig.driver.chats,
            messages: rig.driver.sent,
            sink: rig.sink!.deliveries,
            turns: rig.model.turns,
            polls: rig.sink!.telegram.polls,
            memory: await observer.memoryRows(),
            logs,
            faults: played.faults,
            instance: BOT,
            endedAt,
          })
        : undefined;
    const history = buildHistory({
      published: feed.published,
      sink: rig.sink!.deliveries,
      audit: observer.audit(),
      grants: await observer.grants(),
      faults: played.faults,
      logs,
      reloads: played.reloads,
      skews: played.skews,
      endState: await observer.endState(),
      ...(chat ? { chat } : {}),
      quietFrom,
      endedAt,
    });
    const result = checkHistory(history, CHECK_PARAMS);
    const report = [
      describeSchedule(o.seed, schedule),
      ...played.reloads.map(describeReload),
      ...played.skews.map(
        (s) => `skew: ${s.daemonId} under ${s.skewSecs} s measured ${s.measuredSecs ?? '-'} s`,
      ),
      ...(o.chat ? [describeAimed(played.faults)] : []),
      formatReport(result),
    ].join('\n');
    if (o.artifacts && !(o.artifacts.onlyOnFail && result.ok)) {
      writeArtifacts(o.artifacts.dir, {
        history,
        report,
        logs: new Map(rig.daemons.map((d) => [d.id, d.lines])),
      });
      log(`fault run: history, logs and report in ${o.artifacts.dir}`);
    }
    return { seed: o.seed, schedule, faults: played.faults, result, report };
  } finally {
    await teardown(rig);
  }
}

/** The victims of the faults aimed at the bot's poller (the schedule names the targets it drew). */
function describeAimed(faults: readonly AppliedFault[]): string {
  const hit = faults.filter((f) => AIMED.has(f.kind)).map((f) => `${f.kind} ${f.daemonId}`);
  return `aimed at the bot's poller: ${hit.length ? hit.join(', ') : 'nothing'}`;
}

function describeReload(r: ReloadProbe): string {
  const converged =
    r.convergedAt === undefined || r.healedAt === undefined
      ? 'never converged'
      : `ran config v${r.pushedVersion} ${Math.abs(r.convergedAt - r.healedAt)} ms ${r.convergedAt > r.healedAt ? 'after' : 'before'} the heal (${r.convergedAt - r.at} ms after the reload)`;
  return `reload: with ${r.daemonId} cut off from NATS, agent reload exited ${r.exitCode}; ${r.daemonId} ${converged}`;
}

/**
 * The quiet period: every published item received, and at least failover + two intervals more of ticking
 * (so a job stuck after the last fault shows as a gap); with chat, every message answered (or as many
 * replies that answer nothing in its chat as unanswered messages), and at least the redelivery window (so a
 * late duplicate shows); at most 60 s.
 */
async function quiet(rig: Rig): Promise<void> {
  const t0 = Date.now();
  const minMs = Math.max(
    3 * CHECK_PARAMS.heartbeatWindowMs + 2 * INTERVAL_MS,
    rig.driver ? redeliveryWindowMs(CHECK_PARAMS.chat!) : 0,
  );
  const wanted = () => {
    const got = new Set(rig.sink!.deliveries.map((d) => d.text));
    return rig.feed!.published.every((p) => got.has(p.itemId)) && (!rig.driver || chatSettled(rig));
  };
  while (Date.now() - t0 < 60_000 && !(Date.now() - t0 >= minMs && wanted())) await sleep(250);
}

/** Every chat has at least as many replies that answer nothing as messages without an answer. */
function chatSettled(rig: Rig): boolean {
  const answered = new Set<string>();
  const failures = new Map<string, number>();
  for (const d of rig.sink!.deliveries) {
    const a = parseAnswerText(d.text);
    if (a) answered.add(chatMessageText(a.chat, a.seq));
    else failures.set(d.chatId, (failures.get(d.chatId) ?? 0) + 1);
  }
  const open = new Map<string, number>();
  for (const m of rig.driver!.sent)
    if (!answered.has(chatMessageText(m.chat, m.seq))) open.set(m.chatId, (open.get(m.chatId) ?? 0) + 1);
  return [...open].every(([chatId, n]) => (failures.get(chatId) ?? 0) >= n);
}
