import { silentLogger, type Logger } from '@agent/log';
import { singleAnswer } from './request-many.js';
import { LocalBus } from './local-bus.js';
import { SocketServer } from './socket-server.js';
import type {
  Broker,
  MessageHandler,
  PublishOptions,
  RequestManyOptions,
  RequestOptions,
  Subscription,
} from './types.js';

export interface LocalBrokerOptions {
  /** When set, the bus is also served on this Unix socket (mode 0600) for other local processes. */
  socketPath?: string;
  logger?: Logger;
}

export interface LocalBroker extends Broker {
  readonly kind: 'local';
  /** The socket being served, if any. */
  readonly socketPath: string | undefined;
}

class ServedLocalBroker implements LocalBroker {
  readonly kind = 'local' as const;
  constructor(
    private readonly bus: LocalBus,
    private readonly server: SocketServer | undefined,
  ) {}
  get socketPath(): string | undefined {
    return this.server?.socketPath;
  }
  publish(subject: string, data: unknown, opts?: PublishOptions): Promise<void> {
    return this.bus.publish(subject, data, opts);
  }
  subscribe(subject: string, handler: MessageHandler): Subscription {
    return this.bus.subscribe(subject, handler);
  }
  request(subject: string, data: unknown, opts?: RequestOptions): Promise<unknown> {
    return this.bus.request(subject, data, opts);
  }
  requestMany(subject: string, data: unknown, opts: RequestManyOptions): Promise<unknown[]> {
    return singleAnswer((timeoutMs) => this.bus.request(subject, data, { timeoutMs }), opts);
  }

  flush(): Promise<void> {
    return this.bus.flush();
  }
  async close(): Promise<void> {
    // Socket first: remote clients are told (connection closed) before the bus goes away.
    await this.server?.close();
    await this.bus.close();
  }
}

/**
 * The daemon side of the `local` kind: an in-process bus, optionally served on a Unix socket.
 * See `prepareSocketPath` for the checks made on the socket path before binding.
 */
export async function createLocalBroker(opts: LocalBrokerOptions = {}): Promise<LocalBroker> {
  const logger = opts.logger ?? silentLogger;
  const bus = new LocalBus(logger);
  const server =
    opts.socketPath === undefined ? undefined : await SocketServer.start(opts.socketPath, bus, logger);
  return new ServedLocalBroker(bus, server);
}
