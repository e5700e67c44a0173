import {
  ClosedConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  RequestError,
  TimeoutError,
  connect,
  type NatsConnection,
} from '@nats-io/transport-node';
import { silentLogger, type Logger } from '@agent/log';
import { BrokerError } from './errors.js';
import { checkTimeout, invokeHandler, noRespondersError, timeoutError } from './local-bus.js';
import { MAX_PAYLOAD_BYTES, decodePayload, encodePayload } from './payload.js';
import { assertSubject } from './subject.js';
import { redactUrl, type NatsBrokerOptions } from './nats-options.js';
import { gatherMany } from './request-many.js';
import type {
  Broker,
  MessageHandler,
  PublishOptions,
  RequestManyOptions,
  RequestOptions,
  Subscription,
} from './types.js';

/** A URL safe for messages and logs: user info (credentials) is replaced. */

function closedError(): BrokerError {
  return new BrokerError('BROKER_CLOSED', 'the NATS connection is closed; create a new broker');
}

function mapNatsError(err: unknown, subject: string, timeoutMs?: number): BrokerError {
  if (err instanceof BrokerError) return err;
  if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders()))
    return noRespondersError(subject);
  if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) {
    return timeoutError(subject, timeoutMs ?? 0);
  }
  if (err instanceof ClosedConnectionError || err instanceof DrainingConnectionError) return closedError();
  return new BrokerError(
    'BROKER_ERROR',
    `NATS operation on "${subject}" failed: ${(err as Error)?.message ?? String(err)}`,
    {
      cause: err,
    },
  );
}

/**
 * Connects to a NATS server. The first connection must succeed (BROKER_UNREACHABLE otherwise, as soon
 * as the server refuses); after that the client reconnects by itself, forever, buffering publishes.
 */
export async function connectNats(opts: NatsBrokerOptions): Promise<Broker> {
  const logger = opts.logger ?? silentLogger;
  const servers = opts.url
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers,
      name: opts.name ?? 'agent',
      timeout: opts.connectTimeoutMs ?? 2000,
      waitOnFirstConnect: false,
      reconnect: true,
      maxReconnectAttempts: -1,
    });
  } catch (err) {
    throw new BrokerError(
      'BROKER_UNREACHABLE',
      `NATS server not reachable at ${redactUrl(opts.url)} (${(err as Error)?.message ?? String(err)}): start it or fix url in broker.yaml`,
      { cause: err },
    );
  }
  logger.info('broker connected to NATS', { url: redactUrl(opts.url), server: nc.getServer() });
  return new NatsBroker(nc, logger);
}

class NatsBroker implements Broker {
  readonly kind = 'nats' as const;
  private readonly statusDone: Promise<void>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly logger: Logger,
  ) {
    this.statusDone = this.watchStatus();
  }

  /** The server may be configured with a smaller `max_payload` than our own limit. */
  private maxPayload(): number {
    const server = this.nc.info?.max_payload;
    return typeof server === 'number' && server > 0 ? Math.min(server, MAX_PAYLOAD_BYTES) : MAX_PAYLOAD_BYTES;
  }

  private async watchStatus(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect') this.logger.warn('broker disconnected from NATS', { server: s.server });
        else if (s.type === 'reconnect') this.logger.info('broker reconnected to NATS', { server: s.server });
        else if (s.type === 'error') this.logger.warn('broker NATS server error', { error: s.error.message });
      }
    } catch {
      // The iterator ends with the connection.
    }
  }

  publish(subject: string, data: unknown, opts?: PublishOptions): Promise<void> {
    try {
      assertSubject(subject, false);
      if (opts?.reply !== undefined) assertSubject(opts.reply, false);
      if (this.nc.isClosed() || this.nc.isDraining()) throw closedError();
      const text = encodePayload(data, this.maxPayload());
      this.nc.publish(subject, text, opts?.reply !== undefined ? { reply: opts.reply } : undefined);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(mapNatsError(err, subject));
    }
  }

  subscribe(subject: string, handler: MessageHandler): Subscription {
    assertSubject(subject, true);
    if (this.nc.isClosed() || this.nc.isDraining()) throw closedError();
    const sub = this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) {
          this.logger.warn('broker subscription error', { subject, error: err.message });
          return;
        }
        let data: unknown;
        try {
          data = msg.data.length === 0 ? null : decodePayload(msg.string());
        } catch {
          this.logger.warn('broker message dropped: body is not JSON', { subject: msg.subject });
          return;
        }
        invokeHandler(
          handler,
          msg.reply ? { subject: msg.subject, data, reply: msg.reply } : { subject: msg.subject, data },
          this.logger,
        );
      },
    });
    return {
      subject,
      unsubscribe: () => {
        try {
          sub.unsubscribe();
        } catch {
          // Already gone with the connection.
        }
      },
    };
  }

  async request(subject: string, data: unknown, opts?: RequestOptions): Promise<unknown> {
    const timeoutMs = checkTimeout(opts?.timeoutMs);
    assertSubject(subject, false);
    if (this.nc.isClosed() || this.nc.isDraining()) throw closedError();
    const text = encodePayload(data, this.maxPayload());
    try {
      const msg = await this.nc.request(subject, text, { timeout: timeoutMs });
      return msg.data.length === 0 ? null : decodePayload(msg.string());
    } catch (err) {
      // Closing rejects pending requests with a generic "connection closed" RequestError.
      if (
        !(err instanceof RequestError && err.isNoResponders()) &&
        (this.nc.isClosed() || this.nc.isDraining())
      ) {
        throw new BrokerError('BROKER_CLOSED', 'the broker closed before an answer came');
      }
      throw mapNatsError(err, subject, timeoutMs);
    }
  }

  async requestMany(subject: string, data: unknown, opts: RequestManyOptions): Promise<unknown[]> {
    const maxWaitMs = checkTimeout(opts.maxWaitMs);
    assertSubject(subject, false);
    if (this.nc.isClosed() || this.nc.isDraining()) throw closedError();
    const text = encodePayload(data, this.maxPayload());
    try {
      // The server's own timer strategy bounds the total wait; count, stall and `until` are ours.
      const answers = (await this.nc.requestMany(subject, text, {
        strategy: 'timer',
        maxWait: maxWaitMs,
      })) as AsyncIterable<{ data: Uint8Array; string(): string }> & { stop?(): void };
      return await gatherMany(answers, opts, (msg) =>
        msg.data.length === 0 ? null : decodePayload(msg.string()),
      );
    } catch (err) {
      if (this.nc.isClosed() || this.nc.isDraining())
        throw new BrokerError('BROKER_CLOSED', 'the broker closed before the answers came');
      throw mapNatsError(err, subject, maxWaitMs);
    }
  }

  async flush(): Promise<void> {
    if (this.nc.isClosed() || this.nc.isDraining()) throw closedError();
    try {
      await this.nc.flush();
    } catch (err) {
      throw mapNatsError(err, 'flush');
    }
  }

  async close(): Promise<void> {
    if (!this.nc.isClosed() && !this.nc.isDraining()) {
      try {
        await this.nc.drain();
      } catch (err) {
        this.logger.debug('broker NATS drain failed', { error: (err as Error).message });
        await this.nc.close().catch(() => undefined);
      }
    }
    await this.nc.closed();
    await this.statusDone;
  }
}
