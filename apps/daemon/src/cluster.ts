/**
 * Cluster mode as the daemon runs it: one PostgreSQL pool, this daemon's membership and its leader term,
 * the desired config bundle as the directory every boot and reload reads, and the answers other daemons and
 * the CLI ask for over the broker. Single-host mode never loads this module's dependencies.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { AdminClusterStatus } from '@agent/admin-api';
import type { ConversationMemory } from '@agent/agent-runtime';
import { createPostgresMemory } from '@agent/agent-runtime/postgres';
import type { Broker, Subscription } from '@agent/broker';
import type { ClusterMembersAnswer } from '@agent/cli';
import { CLUSTER_MEMBERS_SUBJECT } from '@agent/cli/subjects';
import {
  clusterStatus,
  createClusterMetrics,
  createLeaderElection,
  createMembership,
  desiredVersion,
  loadBundle,
  materializeBundle,
  migrateCluster,
  type ClusterSettings,
  type ClusterStatus,
  type LeaderElection,
  type Membership,
} from '@agent/cluster';
import { loadConfig, type LoadOptions, type LoadResult } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import { createPool, POOL_DEFAULTS, type Pool } from '@agent/pg';
import type { ClusterRunnerOptions, Runner } from '@agent/poller-runtime';
import { createPostgresStateStore, type ClaimingStore } from '@agent/poller-runtime/postgres';
import type { Registry } from 'prom-client';
import { createPollerHints } from './poller-hints.js';
import type { ReloadPipeline, ReloadSource } from './reload.js';
import { DAEMON_VERSION } from './version.js';

export { startClusterChat } from './cluster-chat.js';

/** The leader term whose holder exports the per-job gauges (read from PostgreSQL). */
const LEADER_TERM = 'metrics';

export interface ClusterNode {
  readonly settings: ClusterSettings;
  readonly pool: Pool;
  readonly membership: Membership;
  readonly leader: LeaderElection;
  /** The desired bundle as a directory, with its version; `null` before the first `agent config push`. */
  desired(): Promise<(ReloadSource & { hash: string }) | null>;
  /** What a reload read: recorded for the other daemons, the CLI and the metrics. */
  applied(version: number, hash: string): Promise<void>;
  /** The fields of this daemon's reload acks. */
  identity(): { daemon_id: string; host: string; config_version: number; config_hash: string };
  /** Answers `control.cluster.members` from the membership table. */
  serveMembers(broker: Broker): Subscription;
  status(): Promise<ClusterStatus>;
  stop(): Promise<void>;
}

export interface JoinOptions {
  settings: ClusterSettings;
  /** The daemon's own `--config-dir`: the host-local files come from there. */
  configDir: string;
  dataDir: string;
  logger: Logger;
  registry: Registry;
  ticksInFlight?: () => number;
}

/**
 * How long the server keeps a session of this daemon idle inside a transaction: two thirds of the failover
 * window, at most the pool's default. A stopped or cut-off daemon's open transaction keeps its row locks,
 * and a locked job row can be neither broken nor claimed: its takeover would wait for this timeout instead
 * of the window. Its last statement came less than one heartbeat interval (at most a third of the window)
 * after its last heartbeat, so its session ends before the others may declare it dead.
 */
export function idleInTransactionTimeoutMs(heartbeat: ClusterSettings['heartbeat']): number {
  return Math.min(POOL_DEFAULTS.idleInTransactionTimeoutMs, Math.floor((2 * heartbeat.staleAfterMs) / 3));
}

async function joinCluster(o: JoinOptions): Promise<ClusterNode> {
  const { settings, logger } = o;
  const log = logger.child({ component: 'cluster' });
  const { url, schema, poolMax } = settings.postgres;
  const pool = createPool({
    url,
    applicationName: `agent ${settings.daemonId}`,
    max: poolMax,
    idleInTransactionTimeoutMs: idleInTransactionTimeoutMs(settings.heartbeat),
    onIdleError: (err) => log.warn('postgres session failed while idle', { err: err.message }),
  });
  const warn = (what: string) => (err: Error) => log.warn(what, { err: err.message });
  try {
    await migrateCluster(pool, schema);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  const membership = createMembership({
    pool,
    schema,
    daemonId: settings.daemonId,
    version: DAEMON_VERSION,
    intervalMs: settings.heartbeat.intervalMs,
    staleAfterMs: settings.heartbeat.staleAfterMs,
    ...(o.ticksInFlight ? { ticksInFlight: o.ticksInFlight } : {}),
    onError: warn('cluster heartbeat failed'),
  });
  const leader = createLeaderElection({
    pool,
    schema,
    name: LEADER_TERM,
    holderId: membership.holderId,
    ttlMs: settings.heartbeat.staleAfterMs,
    intervalMs: settings.heartbeat.intervalMs,
    onError: warn('cluster leader round failed'),
  });
  const metrics = createClusterMetrics(o.registry);
  metrics.leader(settings.daemonId, false);
  leader.onChange((mine) => {
    metrics.leader(settings.daemonId, mine);
    log.info(mine ? 'this daemon is the cluster leader' : 'this daemon is no longer the cluster leader');
  });
  let leaving = false;
  membership.onTrustChange((trusted) => {
    if (leaving) return;
    if (trusted) log.info('cluster membership trusted');
    else log.warn('cluster membership not trusted: no heartbeat went through within the window');
  });
  try {
    await membership.start();
    await leader.start();
  } catch (err) {
    await leader.stop().catch(() => {});
    await membership.stop().catch(() => {});
    await pool.end().catch(() => {});
    throw err;
  }
  let running = { version: 0, hash: '' };
  const bundlesDir = join(o.dataDir, 'cluster');

  return {
    settings,
    pool,
    membership,
    leader,
    async desired() {
      const version = await desiredVersion(pool, schema);
      if (version === 0) return null;
      const bundle = await loadBundle(pool, schema, version);
      const dir = materializeBundle({ bundle, localConfigDir: o.configDir, parentDir: bundlesDir });
      return { dir, version, hash: bundle.hash };
    },
    async applied(version, hash) {
      running = { version, hash };
      metrics.appliedVersion(version);
      await membership.setApplied(version, hash);
    },
    identity: () => ({
      daemon_id: settings.daemonId,
      host: hostname(),
      config_version: running.version,
      config_hash: running.hash,
    }),
    serveMembers(broker) {
      return broker.subscribe(CLUSTER_MEMBERS_SUBJECT, async (msg) => {
        if (!msg.reply) return;
        const live = await membership.liveMembers();
        metrics.members(live.length);
        const answer: ClusterMembersAnswer = {
          members: live.map((m) => ({ daemon_id: m.daemonId, host: m.host, seen_ago_ms: m.seenAgoMs })),
        };
        await broker.publish(msg.reply, answer);
      });
    },
    status: () =>
      clusterStatus({ pool, schema, staleAfterMs: settings.heartbeat.staleAfterMs, leaderName: LEADER_TERM }),
    async stop() {
      leaving = true;
      await leader.stop().catch(warn('cluster leader stop failed'));
      await membership.stop().catch(warn('cluster leave failed'));
      await pool.end().catch(() => {});
    },
  };
}

/**
 * Joins the cluster and reads the desired config bundle: the boot of a cluster daemon. No bundle yet is a
 * refusal with the command that makes one; the daemon leaves the cluster again before it throws.
 */
export async function bootFromBundle(
  settings: ClusterSettings,
  o: Omit<JoinOptions, 'settings'> & { loadOptions: Omit<LoadOptions, 'previous'> },
): Promise<{ node: ClusterNode; boot: LoadResult }> {
  const node = await joinCluster({ ...o, settings });
  try {
    const desired = await node.desired();
    if (!desired)
      throw new Error(
        `cluster mode: PostgreSQL holds no config bundle yet; run \`agent config push --config-dir ${o.configDir}\` on the host that has the files, then start again`,
      );
    const boot = loadConfig(desired.dir, { ...o.loadOptions, version: desired.version });
    if (boot.snapshot) await node.applied(desired.version, desired.hash);
    return { node, boot };
  } catch (err) {
    await node.stop();
    throw err;
  }
}

/**
 * The cluster's broker side and convergence: answers `control.cluster.members`, and reloads when a heartbeat
 * finds a newer desired bundle than this daemon runs (a daemon that missed the doorbell catches up there).
 * One attempt per version: a bundle this daemon cannot apply is not retried every heartbeat.
 */
export function serveCluster(
  node: ClusterNode,
  broker: Broker,
  reloads: ReloadPipeline,
  logger: Logger,
  cleanups: (() => Promise<void>)[],
): void {
  const members = node.serveMembers(broker);
  let attempted = node.identity().config_version;
  const off = node.membership.onDesiredVersion((desired) => {
    if (desired === attempted) return;
    attempted = desired;
    logger.info('cluster: a newer config bundle is desired; reloading', {
      desired,
      running: node.identity().config_version,
    });
    void reloads.reload({ source: 'cluster' });
  });
  cleanups.push(async () => {
    off();
    members.unsubscribe();
  });
}

/** `GET /admin/cluster`: the status as the wire shows it. */
export async function clusterView(node: ClusterNode): Promise<AdminClusterStatus> {
  const s = await node.status();
  return {
    desired_config_version: s.desiredConfigVersion,
    leader: s.leader ? { daemon_id: s.leader.daemonId, term: s.leader.term } : null,
    members: s.members.map((m) => ({
      daemon_id: m.daemonId,
      host: m.host,
      version: m.version,
      state: m.state,
      seen_ago_ms: m.seenAgoMs,
      applied_config_version: m.appliedConfigVersion,
      applied_config_hash: m.appliedConfigHash,
      ticks_in_flight: m.ticksInFlight,
      jobs_held: m.jobsHeld,
      inbound_partitions: m.inboundPartitions,
    })),
    channel_owners:
      s.channelOwners?.map((o) => ({
        plugin: o.plugin,
        instance: o.instance,
        daemon_id: o.daemonId,
        term: o.term,
        expires_in_ms: o.expiresInMs,
      })) ?? null,
  };
}

/**
 * The poller side of cluster mode: the shared job table in PostgreSQL, the runner's claim-loop options, and
 * what membership, leadership and the other daemons' due hints mean for the runner (a stale member's leases
 * are broken so that its jobs are taken over within the heartbeat window, not their TTL; only the leader
 * exports per-job gauges; a hint makes the claim loop look early).
 */
export async function clusterPollerStore(
  node: ClusterNode,
  broker: Broker,
  logger: Logger,
): Promise<{
  store: ClaimingStore;
  runnerOptions(configVersion: () => number): ClusterRunnerOptions;
  /** Connects membership, leadership and due hints to the runner; returns the disconnect. */
  follow(runner: Runner): () => void;
}> {
  const store = await createPostgresStateStore({ pool: node.pool, schema: node.settings.postgres.schema });
  const hints = createPollerHints({ broker, holderId: node.membership.holderId, logger });
  return {
    store,
    runnerOptions: (configVersion) => ({
      store,
      configVersion,
      trusted: () => node.membership.trusted(),
      maxConcurrentTicks: node.settings.claim.maxConcurrentTicks,
      pollMaxMs: node.settings.claim.pollMaxMs,
      announceDue: hints.announce,
    }),
    follow(runner) {
      runner.exportJobGauges(node.leader.isLeader());
      const offLeader = node.leader.onChange((mine) => runner.exportJobGauges(mine));
      const breakLeasesOf = (holderId: string): void =>
        void store
          .breakLeasesOf(holderId)
          .then((jobs) => {
            if (jobs.length === 0) return;
            runner.wake();
            hints.announce({ jobIds: jobs, dueAt: null });
          })
          // Tried again after the next heartbeat, which reports the member stale again.
          .catch((err: Error) =>
            logger.warn("cluster: breaking a stale member's leases failed; retrying at the next heartbeat", {
              holder: holderId,
              err: err.message,
            }),
          );
      const offStale = node.membership.onStaleMembers((members) => {
        for (const m of members) breakLeasesOf(m.holderId);
      });
      // This daemon's previous incarnation (crashed, say): its row is ours now, so no other member will
      // ever see it stale and break the leases it held. Without this, they would wait out their TTL.
      const replaced = node.membership.replacedHolderId;
      if (replaced !== null) breakLeasesOf(replaced);
      const offDesired = node.membership.onTrustChange((trusted) => {
        if (trusted) runner.wake();
      });
      const offHints = hints.follow(runner);
      return () => {
        offLeader();
        offStale();
        offDesired();
        offHints();
      };
    },
  };
}

/**
 * Conversation memory in cluster mode: one table in the cluster's schema, on the cluster's pool, so that a
 * conversation continued on another daemon sees its whole history. The caller closes it; the pool stays.
 */
export function clusterMemory(node: ClusterNode): Promise<ConversationMemory> {
  return createPostgresMemory({ pool: node.pool, schema: node.settings.postgres.schema });
}
