import { chmod, lstat, unlink } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '@agent/log';
import { BrokerError, isBrokerError } from './errors.js';
import { LineDecoder, MAX_FRAME_BYTES, encodeFrame } from './framing.js';
import type { LocalBus } from './local-bus.js';
import { encodePayload } from './payload.js';
import { prepareSocketPath } from './socket-path.js';

/** A client that reads slower than this much queued output is disconnected rather than buffered forever. */
const MAX_QUEUED_OUTPUT_BYTES = 8 * 1024 * 1024;
/** Server-side ceiling for a request a client forgot to cancel. */
const MAX_REMOTE_REQUEST_MS = 5 * 60 * 1000;

type Frame = Record<string, unknown>;

/** Serves one socket connection: frames in, bus operations, frames out. */
class Connection {
  private readonly subs = new Map<number, () => void>();
  private readonly requests = new Map<number, () => void>();
  private readonly decoder: LineDecoder;
  private closed = false;

  constructor(
    private readonly socket: Socket,
    private readonly bus: LocalBus,
    private readonly logger: Logger,
  ) {
    this.decoder = new LineDecoder(
      MAX_FRAME_BYTES,
      (line) => this.onLine(line),
      () =>
        this.send({
          op: 'err',
          code: 'BROKER_FRAME_TOO_LARGE',
          message: `frame larger than ${MAX_FRAME_BYTES} bytes refused`,
        }),
    );
    socket.on('data', (chunk: Buffer) => this.decoder.push(chunk));
    socket.on('error', (err) => this.logger.debug('broker socket client error', { error: err.message }));
    socket.on('close', () => this.dispose());
  }

  send(frame: Frame, rawData?: string): void {
    if (this.closed || this.socket.destroyed) return;
    this.socket.write(encodeFrame(frame, rawData));
    if (this.socket.writableLength > MAX_QUEUED_OUTPUT_BYTES) {
      this.logger.warn('broker socket client too slow; disconnecting', {
        queued_bytes: this.socket.writableLength,
      });
      this.socket.destroy();
    }
  }

  private sendError(err: unknown, id?: unknown): void {
    const code = isBrokerError(err) ? err.code : 'BROKER_ERROR';
    const message = err instanceof Error ? err.message : String(err);
    this.send(typeof id === 'number' ? { op: 'err', id, code, message } : { op: 'err', code, message });
  }

  private onLine(line: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      this.sendError(
        new BrokerError('BROKER_BAD_FRAME', 'frame is not valid JSON; send one JSON object per line'),
      );
      return;
    }
    if (
      typeof frame !== 'object' ||
      frame === null ||
      Array.isArray(frame) ||
      typeof (frame as Frame).op !== 'string'
    ) {
      this.sendError(new BrokerError('BROKER_BAD_FRAME', 'frame must be a JSON object with a string "op"'));
      return;
    }
    const f = frame as Frame;
    try {
      this.handle(f);
    } catch (err) {
      this.sendError(err, f.id);
    }
  }

  private handle(f: Frame): void {
    switch (f.op) {
      case 'sub': {
        const sid = expectId(f.sid, 'sid');
        if (this.subs.has(sid)) throw new BrokerError('BROKER_BAD_FRAME', `sid ${sid} is already in use`);
        const unsubscribe = this.bus.subscribeRaw(f.subject as string, (subject, text, reply) =>
          this.send(
            reply === undefined ? { op: 'msg', sid, subject } : { op: 'msg', sid, subject, reply },
            text,
          ),
        );
        this.subs.set(sid, unsubscribe);
        return;
      }
      case 'unsub': {
        const sid = expectId(f.sid, 'sid');
        this.subs.get(sid)?.();
        this.subs.delete(sid);
        return;
      }
      case 'pub': {
        const reply = f.reply === undefined || f.reply === null ? undefined : (f.reply as string);
        this.bus.publishRaw(f.subject as string, encodePayload(f.data), reply);
        return;
      }
      case 'req': {
        const id = expectId(f.id, 'id');
        if (this.requests.has(id)) {
          throw new BrokerError('BROKER_BAD_FRAME', `request id ${id} is already in use`);
        }
        // The client times out by itself and cancels; this is only a backstop, a little later.
        const asked =
          typeof f.timeout_ms === 'number' && f.timeout_ms > 0 ? f.timeout_ms : MAX_REMOTE_REQUEST_MS;
        const abort = new AbortController();
        const answer = this.bus.requestRaw(
          f.subject as string,
          encodePayload(f.data),
          Math.min(asked + 1000, MAX_REMOTE_REQUEST_MS),
          abort.signal,
        );
        this.requests.set(id, () => abort.abort());
        answer.then(
          (text) => {
            this.requests.delete(id);
            this.send({ op: 'res', id }, text);
          },
          (err: unknown) => {
            this.requests.delete(id);
            if (!abort.signal.aborted) this.sendError(err, id);
          },
        );
        return;
      }
      case 'cancel': {
        const id = expectId(f.id, 'id');
        this.requests.get(id)?.();
        this.requests.delete(id);
        return;
      }
      case 'ping': {
        this.send({ op: 'pong', id: f.id ?? null });
        return;
      }
      default:
        throw new BrokerError('BROKER_BAD_FRAME', `unknown op ${JSON.stringify(f.op)}`);
    }
  }

  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const unsubscribe of this.subs.values()) unsubscribe();
    this.subs.clear();
    for (const cancel of this.requests.values()) cancel();
    this.requests.clear();
  }

  end(): void {
    this.dispose();
    this.socket.end();
    this.socket.destroySoon();
  }
}

function expectId(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new BrokerError('BROKER_BAD_FRAME', `"${name}" must be an integer`);
  }
  return value;
}

/** Exposes a LocalBus on a Unix socket that only our user can open. */
export class SocketServer {
  private readonly connections = new Set<Connection>();
  private identity: { dev: number; ino: number } | undefined;

  private constructor(
    readonly socketPath: string,
    private readonly server: Server,
    private readonly logger: Logger,
  ) {}

  static async start(socketPath: string, bus: LocalBus, logger: Logger): Promise<SocketServer> {
    await prepareSocketPath(socketPath, logger);
    const server = createServer({ allowHalfOpen: false });
    const instance = new SocketServer(socketPath, server, logger);
    server.on('connection', (socket) => {
      const conn = new Connection(socket, bus, logger);
      instance.connections.add(conn);
      socket.on('close', () => instance.connections.delete(conn));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // The socket is created by bind() inside listen(); a tight umask makes it 0600 from the
      // first instant. process.umask() throws in worker threads, where the chmod below still applies.
      let previous: number | undefined;
      try {
        previous = process.umask(0o177);
      } catch {
        previous = undefined;
      }
      try {
        server.listen(socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      } finally {
        if (previous !== undefined) process.umask(previous);
      }
    });
    server.on('error', (err) => logger.error('broker socket server error', { error: err.message }));
    await chmod(socketPath, 0o600);
    const st = await lstat(socketPath);
    instance.identity = { dev: st.dev, ino: st.ino };
    logger.info('broker socket listening', { socket_path: socketPath });
    return instance;
  }

  async close(): Promise<void> {
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const conn of this.connections) conn.end();
    await closing;
    // Node unlinks the socket itself; make sure, but never remove a socket another daemon bound since.
    try {
      const st = await lstat(this.socketPath);
      if (this.identity && st.dev === this.identity.dev && st.ino === this.identity.ino)
        await unlink(this.socketPath);
    } catch {
      // already gone
    }
  }
}
