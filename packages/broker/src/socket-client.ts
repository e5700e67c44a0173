import { createConnection, type Socket } from 'node:net';
import { silentLogger, type Logger } from '@agent/log';
import { setTimer, type TimerHandle } from '@agent/timers';
import { singleAnswer } from './request-many.js';
import { BrokerError, isBrokerErrorCode } from './errors.js';
import { LineDecoder, MAX_FRAME_BYTES, encodeFrame } from './framing.js';
import { checkTimeout, invokeHandler, timeoutError } from './local-bus.js';
import { encodePayload } from './payload.js';
import { assertSocketPathShape } from './socket-path.js';
import { assertSubject } from './subject.js';
import type {
  Broker,
  MessageHandler,
  PublishOptions,
  RequestManyOptions,
  RequestOptions,
  Subscription,
} from './types.js';

export interface ConnectLocalBrokerOptions {
  /** The daemon's broker socket, e.g. `<data_dir>/broker.sock`. */
  socketPath: string;
  logger?: Logger;
  /** Upper bound for establishing the connection; 1000 ms when omitted. */
  connectTimeoutMs?: number;
}

const FLUSH_TIMEOUT_MS = 5000;

interface PendingRequest {
  subject: string;
  resolve(data: unknown): void;
  reject(err: BrokerError): void;
  timer: TimerHandle;
}

function unreachable(socketPath: string, err?: NodeJS.ErrnoException): BrokerError {
  const detail = err?.code === 'EACCES' ? 'permission denied' : (err?.code ?? 'connect timed out');
  const hint =
    err?.code === 'EACCES'
      ? 'run the command as the user that runs the daemon'
      : 'start the daemon, or check data_dir / socket_path in broker.yaml';
  return new BrokerError(
    'BROKER_UNREACHABLE',
    `daemon not reachable on broker socket ${socketPath} (${detail}): ${hint}`,
    {
      cause: err,
    },
  );
}

/**
 * Client side of a `local` broker served by another process. Fails at once with BROKER_UNREACHABLE
 * when no daemon listens (missing socket, stale socket, permission denied). It does not reconnect:
 * once the daemon closes the connection every call fails with BROKER_DISCONNECTED.
 */
export async function connectLocalBroker(opts: ConnectLocalBrokerOptions): Promise<Broker> {
  assertSocketPathShape(opts.socketPath);
  const logger = opts.logger ?? silentLogger;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 1000;
  const socket = await new Promise<Socket>((resolve, reject) => {
    const sock = createConnection({ path: opts.socketPath });
    const timer = setTimer(() => {
      sock.destroy();
      reject(unreachable(opts.socketPath));
    }, connectTimeoutMs);
    sock.once('connect', () => {
      timer.cancel();
      sock.removeAllListeners('error');
      resolve(sock);
    });
    sock.once('error', (err: NodeJS.ErrnoException) => {
      timer.cancel();
      reject(unreachable(opts.socketPath, err));
    });
  });
  return new SocketClient(socket, opts.socketPath, logger);
}

class SocketClient implements Broker {
  readonly kind = 'local' as const;
  private readonly subs = new Map<number, { subject: string; handler: MessageHandler }>();
  private readonly pending = new Map<number, PendingRequest>();
  private nextSid = 1;
  private nextRequestId = 1;
  private state: 'open' | 'disconnected' | 'closed' = 'open';
  private readonly closedPromise: Promise<void>;

  constructor(
    private readonly socket: Socket,
    private readonly socketPath: string,
    private readonly logger: Logger,
  ) {
    const decoder = new LineDecoder(
      MAX_FRAME_BYTES,
      (line) => this.onLine(line),
      () => this.logger.warn('broker frame from daemon too large; dropped', { limit_bytes: MAX_FRAME_BYTES }),
    );
    socket.on('data', (chunk: Buffer) => decoder.push(chunk));
    socket.on('error', (err) => this.logger.debug('broker socket error', { error: err.message }));
    this.closedPromise = new Promise((resolve) => {
      socket.on('close', () => {
        if (this.state === 'open') {
          this.state = 'disconnected';
          this.logger.warn('broker connection to daemon lost', { socket_path: this.socketPath });
        }
        this.failAll(
          this.state === 'closed'
            ? new BrokerError('BROKER_CLOSED', 'the broker client closed before an answer came')
            : new BrokerError(
                'BROKER_DISCONNECTED',
                'the daemon closed the broker connection before answering; check that it is still running',
              ),
        );
        this.subs.clear();
        resolve();
      });
    });
  }

  private stateError(): BrokerError | undefined {
    if (this.state === 'closed')
      return new BrokerError('BROKER_CLOSED', 'the broker client is closed; connect again');
    if (this.state === 'disconnected') {
      return new BrokerError(
        'BROKER_DISCONNECTED',
        'the daemon closed the broker connection; check that it is still running and connect again',
      );
    }
    return undefined;
  }

  private failAll(err: BrokerError): void {
    for (const p of this.pending.values()) {
      p.timer.cancel();
      p.reject(err);
    }
    this.pending.clear();
  }

  private write(text: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.write(text, (err) => {
        if (err)
          reject(
            new BrokerError(
              'BROKER_DISCONNECTED',
              `writing to the daemon failed (${err.message}); check that it is still running`,
            ),
          );
        else resolve();
      });
    });
  }

  private onLine(line: string): void {
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.logger.warn('broker frame from daemon is not JSON; dropped');
      return;
    }
    if (typeof frame !== 'object' || frame === null) return;
    switch (frame.op) {
      case 'msg': {
        const sub = this.subs.get(frame.sid as number);
        if (!sub || typeof frame.subject !== 'string') return;
        const msg: { subject: string; data: unknown; reply?: string } = {
          subject: frame.subject,
          data: frame.data ?? null,
        };
        if (typeof frame.reply === 'string') msg.reply = frame.reply;
        invokeHandler(sub.handler, msg, this.logger);
        return;
      }
      case 'res':
      case 'pong':
      case 'err': {
        const p = typeof frame.id === 'number' ? this.pending.get(frame.id) : undefined;
        if (!p) {
          if (frame.op === 'err')
            this.logger.warn('broker daemon reported an error', { code: frame.code, error: frame.message });
          return;
        }
        this.pending.delete(frame.id as number);
        p.timer.cancel();
        if (frame.op !== 'err') p.resolve(frame.data ?? null);
        else {
          const code = isBrokerErrorCode(frame.code) ? frame.code : 'BROKER_ERROR';
          p.reject(
            new BrokerError(
              code,
              typeof frame.message === 'string' ? frame.message : `request on "${p.subject}" failed`,
            ),
          );
        }
        return;
      }
      default:
        return;
    }
  }

  publish(subject: string, data: unknown, opts?: PublishOptions): Promise<void> {
    try {
      const err = this.stateError();
      if (err) throw err;
      assertSubject(subject, false);
      if (opts?.reply !== undefined) assertSubject(opts.reply, false);
      const text = encodePayload(data);
      const frame: Record<string, unknown> = { op: 'pub', subject };
      if (opts?.reply !== undefined) frame.reply = opts.reply;
      return this.write(encodeFrame(frame, text));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  subscribe(subject: string, handler: MessageHandler): Subscription {
    const err = this.stateError();
    if (err) throw err;
    assertSubject(subject, true);
    const sid = this.nextSid++;
    this.subs.set(sid, { subject, handler });
    this.socket.write(encodeFrame({ op: 'sub', sid, subject }));
    return {
      subject,
      unsubscribe: () => {
        if (!this.subs.delete(sid) || this.state !== 'open') return;
        this.socket.write(encodeFrame({ op: 'unsub', sid }));
      },
    };
  }

  request(subject: string, data: unknown, opts?: RequestOptions): Promise<unknown> {
    try {
      const err = this.stateError();
      if (err) throw err;
      const timeoutMs = checkTimeout(opts?.timeoutMs);
      assertSubject(subject, false);
      const text = encodePayload(data);
      const id = this.nextRequestId++;
      return new Promise<unknown>((resolve, reject) => {
        const timer = setTimer(() => {
          if (!this.pending.delete(id)) return;
          if (this.state === 'open') this.socket.write(encodeFrame({ op: 'cancel', id }));
          reject(timeoutError(subject, timeoutMs));
        }, timeoutMs);
        this.pending.set(id, { subject, resolve, reject, timer });
        this.socket.write(encodeFrame({ op: 'req', id, subject, timeout_ms: timeoutMs }, text));
      });
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  requestMany(subject: string, data: unknown, opts: RequestManyOptions): Promise<unknown[]> {
    return singleAnswer((timeoutMs) => this.request(subject, data, { timeoutMs }), opts);
  }

  flush(): Promise<void> {
    const err = this.stateError();
    if (err) return Promise.reject(err);
    // A ping is answered after every frame sent before it has been handled.
    const id = this.nextRequestId++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimer(() => {
        if (this.pending.delete(id)) reject(timeoutError('flush', FLUSH_TIMEOUT_MS));
      }, FLUSH_TIMEOUT_MS);
      this.pending.set(id, { subject: 'flush', resolve: () => resolve(), reject, timer });
      this.socket.write(encodeFrame({ op: 'ping', id }));
    });
  }

  async close(): Promise<void> {
    if (this.state !== 'closed') {
      const wasOpen = this.state === 'open';
      this.state = 'closed';
      this.failAll(new BrokerError('BROKER_CLOSED', 'the broker client closed before an answer came'));
      // Flushes what is queued, then closes; the daemon does not need to answer.
      if (wasOpen) this.socket.destroySoon();
    }
    await this.closedPromise;
  }
}
