/**
 * Chat agents in cluster mode: each single-consumer channel instance (`chat_b`) has one owner among the
 * daemons, which alone runs its inbound side and writes its channel state under its fence; every accepted
 * message goes through the JetStream stream partitioned by chat, and the daemon that holds a message's
 * partition runs its turn (a chat's turns in order, a crash repeating at most the turns in flight).
 * Outbound needs no owner: every daemon sends.
 */
import type { AgentRuntime, ChannelHosting } from '@agent/agent-runtime';
import type { BrokerConfig } from '@agent/broker';
import {
  createChannelStateStore,
  createInboundOwners,
  migrateChatCluster,
  startChatInbound,
  type ChatInbound,
  type InboundOwners,
} from '@agent/chat-cluster';
import type { Logger } from '@agent/log';
import { Gauge } from '@agent/metrics-text';
import type { Registry } from 'prom-client';
import type { ClusterNode } from './cluster.js';

export interface ClusterChat {
  /** What the agent runtime is given: channel state, instance owners and the ingress. */
  readonly hosting: ChannelHosting;
  /** Connects the partitions' turns to the runtime, once it runs. */
  attach(runtime: AgentRuntime): void;
  /** Stops taking messages from the stream (before the runtime stops: its turns may still end). */
  pause(): Promise<void>;
  /** Gives up partitions and instances at once, so other daemons need not wait out a TTL. */
  stop(): Promise<void>;
}

export interface ClusterChatOptions {
  node: ClusterNode;
  broker: BrokerConfig;
  /** How long a partition given up waits for its turns to end: the longest turn. */
  drainTimeoutMs: number;
  logger: Logger;
  registry: Registry;
  /** The bundle version this daemon runs: a message accepted under a newer one waits for it here. */
  configVersion: () => number;
}

/** `agent_inbound_partitions_owned`, read at each scrape. */
function exportOwnedPartitions(registry: Registry, owned: () => number): void {
  const name = 'agent_inbound_partitions_owned';
  if (registry.getSingleMetric(name)) registry.removeSingleMetric(name);
  const gauge = new Gauge({
    name,
    help: 'Inbound chat partitions whose turns this daemon runs now (the sum over the cluster is the partition count).',
    registers: [],
    collect() {
      this.set(owned());
    },
  });
  registry.registerMetric(gauge);
}

export async function startClusterChat(o: ClusterChatOptions): Promise<ClusterChat> {
  const { node, logger } = o;
  const { pool, settings, membership } = node;
  const schema = settings.postgres.schema;
  const log = logger.child({ component: 'chat-cluster' });
  if (!o.broker.url) throw new Error('cluster mode needs the NATS broker (broker.yaml url)');
  await migrateChatCluster(pool, schema);

  const owners: InboundOwners = createInboundOwners({
    pool,
    schema,
    holderId: membership.holderId,
    ttlMs: settings.chat.ownerTtlMs,
    logger: log,
    trusted: () => membership.trusted(),
  });
  let runtime: AgentRuntime | undefined;
  let inbound: ChatInbound;
  try {
    inbound = await startChatInbound({
      servers: o.broker.url,
      name: `agent ${settings.daemonId} chat`,
      ...(o.broker.subjectPrefix ? { subjectPrefix: o.broker.subjectPrefix } : {}),
      pool,
      schema,
      holderId: membership.holderId,
      liveMembers: async () => (await membership.liveMembers()).length,
      partitions: settings.chat.partitions,
      leaseTtlMs: settings.chat.ownerTtlMs,
      ackWaitMs: settings.chat.ackWaitMs,
      drainTimeoutMs: o.drainTimeoutMs,
      logger: log,
      configVersion: o.configVersion,
      handle: async (msg, settle) => {
        // Before the runtime runs, the message is refused and comes again.
        if (!runtime) throw new Error('the agent runtime is not running yet');
        await runtime.handleInbound(msg, settle);
      },
    });
  } catch (err) {
    await owners.stop().catch(() => {});
    throw err;
  }
  exportOwnedPartitions(o.registry, () => inbound.ownedPartitions().length);

  const hosting: ChannelHosting = {
    // An owned instance's state is written only under its owner's fence (a daemon that does not, or no
    // longer, run its inbound side cannot write); other plugins' state is written plainly.
    state: (plugin, instance) =>
      createChannelStateStore({ pool, schema, plugin, fence: () => owners.fence(plugin, instance) }),
    own: (side) => owners.own(side),
    ingress: (msg) => inbound.ingress(msg),
  };
  return {
    hosting,
    attach(r) {
      runtime = r;
    },
    pause: () => inbound.pause(),
    async stop() {
      await inbound.stop().catch((err: Error) => log.warn('chat inbound stop failed', { err: err.message }));
      await owners.stop().catch((err: Error) => log.warn('channel owners stop failed', { err: err.message }));
    },
  };
}
