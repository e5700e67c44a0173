/**
 * Chat inbound through JetStream: accepted messages go into the inbound stream (ingress, any daemon), and
 * each partition of it is consumed by the one daemon holding its lease, which hands the messages to its
 * runtime. Opens its own NATS connection.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { InboundMessage } from '@agent/channels';
import type { Logger } from '@agent/log';
import type { Pool } from '@agent/pg';
import { timeoutSignal } from '@agent/timers';
import { ensurePartitionConsumer, startPartitionConsumer, type InboundHandler } from './consumer.js';
import { createIngress, watchConnection } from './ingress.js';
import { partitionLeases } from './partition-leases.js';
import { startPartitionOwner } from './partition-owner.js';
import { ChatClusterError } from './errors.js';
import {
  DEFAULT_INBOUND_PARTITIONS,
  ensureInboundStream,
  inboundNames,
  type StreamLimits,
} from './stream.js';

export const DEFAULT_INBOUND_LEASE_TTL_MS = 15_000;
export const DEFAULT_INBOUND_ACK_WAIT_MS = 30_000;
/** Unacked messages one partition may have at once (queued or running turns). */
const MAX_ACK_PENDING = 256;
const DEFAULT_DRAIN_TIMEOUT_MS = 60_000;
const PUBLISH_TIMEOUT_MS = 5_000;
const CONNECT_TIMEOUT_MS = 2_000;
const FLUSH_TIMEOUT_MS = 1_000;
/** How long a message the runtime refused (not running) waits before it comes again. */
const REFUSED_RETRY_MS = 1_000;

/**
 * How long a message whose turn was handed back waits before it comes again: half the lease TTL. A daemon
 * cut off from PostgreSQL stops consuming within the TTL of its last renewal (which came before the failed
 * read), so with three deliveries (the consumer's bound) the last one comes at least a TTL after the first, to
 * the partition's next owner and not to the cut-off daemon again; a short outage is over by then as well.
 */
function handBackDelayMs(ttlMs: number): number {
  return Math.ceil(ttlMs / 2);
}

export interface ChatInboundOptions {
  /** NATS server URL(s), comma-separated. */
  servers: string;
  /** Client name shown by the server's monitoring pages. */
  name?: string;
  /** `broker.yaml` `subject_prefix` (`t1` or `t1.`), for deployments sharing one NATS server. */
  subjectPrefix?: string;
  pool: Pool;
  schema: string;
  /** This daemon's holder id (`Membership.holderId`). */
  holderId: string;
  /** How many members are live, this daemon included. */
  liveMembers: () => Promise<number>;
  /** Default `DEFAULT_INBOUND_PARTITIONS`; every daemon of a cluster must use the same number. */
  partitions?: number;
  /** Default 15 s. */
  leaseTtlMs?: number;
  /** Default 30 s. */
  ackWaitMs?: number;
  /** How long a partition being handed over waits for its turns in flight; default 60 s. */
  drainTimeoutMs?: number;
  /** The stream's retention and replicas (defaults: 24 h, 1 GiB, 1 replica). */
  stream?: StreamLimits;
  logger: Logger;
  /** Called whenever the set of owned partitions changed. */
  onOwnedChange?: (owned: number[]) => void;
  /** Hands one message to the runtime (`handleInbound`): resolves once queued, rejects when not running. */
  handle: InboundHandler;
  /**
   * The config version this daemon runs: a message carries the version it was accepted under, and waits
   * (bounded) for a daemon that runs an older one to catch up. Without it, nothing is stamped or waits.
   */
  configVersion?: () => number;
}

export interface ChatInbound {
  /** Stores one accepted message; resolves once JetStream confirmed it. */
  ingress(msg: InboundMessage): Promise<void>;
  ownedPartitions(): number[];
  /** Stops fetching new messages on all partitions and takes no new ones; leases are kept. */
  pause(): Promise<void>;
  /** Stops the consumers, ends the leases at once and closes the NATS connection. */
  stop(): Promise<void>;
}

const bad = (what: string) => new ChatClusterError('CHAT_STREAM_BAD_OPTIONS', `chat inbound: ${what}`);

function checkOptions(o: ChatInboundOptions): { partitions: number; ttlMs: number; ackWaitMs: number } {
  const partitions = o.partitions ?? DEFAULT_INBOUND_PARTITIONS;
  const ttlMs = o.leaseTtlMs ?? DEFAULT_INBOUND_LEASE_TTL_MS;
  const ackWaitMs = o.ackWaitMs ?? DEFAULT_INBOUND_ACK_WAIT_MS;
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 1024)
    throw bad(`partitions ${partitions}: use a whole number from 1 to 1024`);
  if (!Number.isFinite(ttlMs) || ttlMs < 600) throw bad(`lease TTL ${ttlMs} ms: use at least 600 ms`);
  if (!Number.isFinite(ackWaitMs) || ackWaitMs < 1000)
    throw bad(`ack wait ${ackWaitMs} ms: use at least 1 s`);
  return { partitions, ttlMs, ackWaitMs };
}

/** A URL with its user info replaced, for logs and errors. */
const redact = (url: string): string => url.replace(/\/\/[^/@]*@/g, '//[redacted]@');

export async function startChatInbound(o: ChatInboundOptions): Promise<ChatInbound> {
  const { partitions, ttlMs, ackWaitMs } = checkOptions(o);
  const names = inboundNames(o.subjectPrefix);
  const logger = o.logger.child({ stream: names.stream });
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: o.servers
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
      name: o.name ?? 'agent chat inbound',
      timeout: CONNECT_TIMEOUT_MS,
      reconnect: true,
      maxReconnectAttempts: -1,
    });
  } catch (err) {
    throw new ChatClusterError(
      'CHAT_STREAM_UNREACHABLE',
      `NATS server not reachable at ${redact(o.servers)}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const connection = watchConnection(nc, logger);
  let jsm;
  try {
    jsm = await jetstreamManager(nc, { timeout: PUBLISH_TIMEOUT_MS });
  } catch (err) {
    await nc.close();
    throw new ChatClusterError(
      'CHAT_STREAM_UNREACHABLE',
      `JetStream is not available at ${redact(o.servers)}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  try {
    await ensureInboundStream(jsm, names, o.stream);
  } catch (err) {
    await nc.close();
    throw err;
  }
  const js = jsm.jetstream();
  const settings = { ackWaitMs, maxAckPending: MAX_ACK_PENDING };

  let stopped = false;
  const ingress = createIngress({
    js,
    names,
    partitions,
    connection,
    timeoutMs: PUBLISH_TIMEOUT_MS,
    logger,
    stopped: () => stopped,
    ...(o.configVersion ? { configVersion: o.configVersion } : {}),
  });
  const owner = startPartitionOwner({
    partitions,
    holderId: o.holderId,
    leases: partitionLeases({ db: o.pool, schema: o.schema, holderId: o.holderId, ttlMs }),
    liveMembers: o.liveMembers,
    ttlMs,
    drainTimeoutMs: o.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS,
    consume: (partition) =>
      startPartitionConsumer({
        js,
        names,
        partition,
        ackWaitMs,
        ensure: () => ensurePartitionConsumer(jsm, names, partition, settings),
        handle: o.handle,
        retryMs: REFUSED_RETRY_MS,
        handBackMs: handBackDelayMs(ttlMs),
        connected: connection.up,
        ...(o.configVersion ? { configVersion: o.configVersion } : {}),
        logger,
      }),
    flush: async () => {
      // Acks and naks go out with the next write anyway; a flush only waits for the server's answer, and
      // never longer than a short while (not at all while disconnected).
      if (!connection.up()) return false;
      const limit = timeoutSignal(FLUSH_TIMEOUT_MS, { unref: true });
      const confirmed = await Promise.race([
        nc.flush().then(() => true),
        new Promise<boolean>((r) => limit.signal.addEventListener('abort', () => r(false))),
      ]);
      limit.cancel();
      return confirmed;
    },
    onOwnedChange: o.onOwnedChange,
    logger,
  });
  await owner.round();
  logger.info('chat inbound started', { partitions, owned: owner.owned().length });

  return {
    ingress,
    ownedPartitions: owner.owned,
    pause: () => owner.pause(),
    async stop() {
      if (stopped) return;
      stopped = true;
      await owner.stop();
      await nc.close();
      await connection.ended;
      logger.info('chat inbound stopped');
    },
  };
}
