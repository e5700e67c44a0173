/**
 * Ingress: an accepted chat message goes to its chat's partition subject, with its message id for
 * JetStream's dedup and the config version it was accepted under, and counts as stored once JetStream confirms it (a duplicate confirmation included:
 * another daemon, or an earlier try, stored it). While the connection is down it is refused at once, so
 * that the channel does not confirm it upstream; the outage is logged once, not per message.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { InboundMessage } from '@agent/channels';
import type { Logger } from '@agent/log';
import { versionHeaders } from './config-version.js';
import { ChatClusterError } from './errors.js';
import { inboundMessageId, partitionOf, type InboundNames } from './stream.js';

/** Whether the NATS connection is up, as its status events say; logs each outage's start and end. */
export interface ConnectionWatch {
  up(): boolean;
  /** Resolves once the connection closed and its status events ended. */
  readonly ended: Promise<void>;
}

export function watchConnection(nc: NatsConnection, logger: Logger): ConnectionWatch {
  let up = true;
  const ended = (async () => {
    try {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' && up) {
          up = false;
          logger.warn('chat inbound disconnected from NATS: new chat messages are refused until it is back', {
            server: s.server,
          });
        } else if (s.type === 'reconnect' && !up) {
          up = true;
          logger.info('chat inbound reconnected to NATS', { server: s.server });
        }
      }
    } catch {
      // The status iterator ends with the connection.
    }
  })();
  return { up: () => up && !nc.isClosed(), ended };
}

export interface IngressOptions {
  js: JetStreamClient;
  names: InboundNames;
  partitions: number;
  connection: ConnectionWatch;
  /** How long to wait for JetStream's confirmation. */
  timeoutMs: number;
  logger: Logger;
  stopped: () => boolean;
  /** The config version this daemon runs: each message carries it (see `config-version.ts`). */
  configVersion?: () => number;
}

export type Ingress = (msg: InboundMessage) => Promise<void>;

export function createIngress(o: IngressOptions): Ingress {
  let failing = false;
  return async (msg) => {
    if (o.stopped())
      throw new ChatClusterError('CHAT_STREAM_STOPPED', 'the chat inbound is stopped: message not stored');
    if (!o.connection.up())
      throw new ChatClusterError('CHAT_STREAM_UNAVAILABLE', 'NATS is disconnected: chat message not stored');
    const subject = o.names.subject(partitionOf(msg, o.partitions));
    try {
      await o.js.publish(subject, JSON.stringify(msg), {
        msgID: inboundMessageId(msg),
        timeout: o.timeoutMs,
        expect: { streamName: o.names.stream },
        ...(o.configVersion ? { headers: versionHeaders(o.configVersion()) } : {}),
      });
    } catch (err) {
      if (!failing) {
        failing = true;
        o.logger.warn('chat inbound cannot store chat messages: they are refused until JetStream answers', {
          stream: o.names.stream,
          error: err instanceof Error ? err.message : String(err),
        });
      }
      throw new ChatClusterError(
        'CHAT_STREAM_UNAVAILABLE',
        `chat message not stored: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    if (failing) {
      failing = false;
      o.logger.info('chat inbound stores chat messages again', { stream: o.names.stream });
    }
  };
}
