import { silentLogger, type Logger } from '@agent/log';
import type { BrokerConfig } from './config.js';
import { BrokerError } from './errors.js';
import { createLocalBroker } from './local.js';
import { createNatsBroker } from './nats-options.js';
import { connectLocalBroker } from './socket-client.js';
import { withSubjectPrefix } from './subject-prefix.js';
import type { Broker } from './types.js';

export interface BrokerFactoryOptions {
  logger?: Logger;
  /** NATS client name; `agent` when omitted. */
  name?: string;
  /** Upper bound for establishing the connection (socket or NATS). */
  connectTimeoutMs?: number;
}

function needUrl(): BrokerError {
  return new BrokerError(
    'BROKER_CONFIG_INVALID',
    'broker.yaml: kind nats needs url, e.g. url: nats://127.0.0.1:4222',
  );
}

/** The daemon's broker: `local` (serving `socketPath` when given) or `nats`. */
export async function createBroker(config: BrokerConfig, opts: BrokerFactoryOptions = {}): Promise<Broker> {
  const logger = opts.logger ?? silentLogger;
  if (config.kind === 'nats') {
    if (!config.url) throw needUrl();
    const nats = await createNatsBroker({
      url: config.url,
      name: opts.name ?? 'agent-daemon',
      logger,
      connectTimeoutMs: opts.connectTimeoutMs,
    });
    return config.subjectPrefix === undefined ? nats : withSubjectPrefix(nats, config.subjectPrefix);
  }
  return createLocalBroker(
    config.socketPath === undefined ? { logger } : { socketPath: config.socketPath, logger },
  );
}

/**
 * A client of the daemon's broker, from the same config: `local` connects to the daemon's socket
 * (never a private in-process bus, which nobody else could reach); `nats` connects to the server.
 */
export async function connectBroker(config: BrokerConfig, opts: BrokerFactoryOptions = {}): Promise<Broker> {
  const logger = opts.logger ?? silentLogger;
  if (config.kind === 'nats') {
    if (!config.url) throw needUrl();
    const nats = await createNatsBroker({
      url: config.url,
      name: opts.name ?? 'agent-cli',
      logger,
      connectTimeoutMs: opts.connectTimeoutMs,
    });
    return config.subjectPrefix === undefined ? nats : withSubjectPrefix(nats, config.subjectPrefix);
  }
  if (config.socketPath === undefined) {
    throw new BrokerError(
      'BROKER_CONFIG_INVALID',
      'a local broker client needs the daemon socket path; resolve broker.yaml with resolveBrokerConfig(file, { dataDir })',
    );
  }
  return connectLocalBroker({
    socketPath: config.socketPath,
    logger,
    connectTimeoutMs: opts.connectTimeoutMs,
  });
}
