import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimer, type TimerHandle } from '@agent/timers';

/** One request as the fake server received it. */
export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/v1/messages`. */
  path: string;
  /** Header names in lower case; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The parsed JSON body, or `undefined` when it was not JSON. */
  body: unknown;
  rawBody: string;
}

/** What the fake answers to one request. */
export interface FakeReply {
  /** HTTP status; 200 by default. */
  status?: number;
  headers?: Record<string, string>;
  /** Sent as JSON, or verbatim when it is a string. */
  body?: unknown;
  /** Waits this long before answering (cut short when the client goes away). */
  delayMs?: number;
  /** Never answers; the request stays open until the client or the server closes it. */
  hang?: boolean;
  /** Destroys the connection without an answer (a network error for the client). */
  drop?: boolean;
}

export type FakeHandler = (req: RecordedRequest) => FakeReply | Promise<FakeReply>;

export interface FakeModelServer {
  /** The `base_url` to put in a provider config for this fake. */
  readonly baseUrl: string;
  /** Every request received, in order, including refused ones. */
  readonly requests: RecordedRequest[];
  /** Connections currently open (lets tests see a client's pool being closed). */
  readonly openConnections: number;
  /** Queues scripted replies; each valid request takes the next one. */
  reply(...replies: FakeReply[]): void;
  /** Answers valid requests once the queue is empty. */
  setHandler(handler: FakeHandler | undefined): void;
  /** Resolves once `count` requests have arrived. */
  waitForRequests(count: number): Promise<void>;
  /** Resolves once no connection is open. */
  waitForNoConnections(): Promise<void>;
  close(): Promise<void>;
}

/** Vendor rules: a refusal (the API's own error answer) or undefined to use the script. */
type RequestCheck = (req: RecordedRequest) => FakeReply | undefined;

export interface FakeServerSetup {
  basePath: string;
  check: RequestCheck;
  /** The answer when nothing is scripted. */
  unscripted: () => FakeReply;
}

export async function startFakeServer(setup: FakeServerSetup): Promise<FakeModelServer> {
  const requests: RecordedRequest[] = [];
  const queue: FakeReply[] = [];
  let handler: FakeHandler | undefined;
  const sockets = new Set<Socket>();
  const timers = new Set<TimerHandle>();
  let waiters: (() => void)[] = [];
  const notify = (): void => {
    const pending = waiters;
    waiters = [];
    for (const w of pending) w();
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      notify();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = rawBody === '' ? undefined : (JSON.parse(rawBody) as unknown);
    } catch {
      body = undefined;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers,
      body,
      rawBody,
    };
    requests.push(recorded);
    notify();

    const refusal = setup.check(recorded);
    const reply = refusal ?? queue.shift() ?? (handler ? await handler(recorded) : setup.unscripted());
    if (reply.drop) {
      res.socket?.destroy();
      return;
    }
    if (reply.hang) return;
    const delayMs = reply.delayMs ?? 0;
    if (delayMs > 0) {
      const gone = await new Promise<boolean>((resolve) => {
        const timer = setTimer(() => {
          timers.delete(timer);
          resolve(false);
        }, delayMs);
        timers.add(timer);
        res.on('close', () => {
          timer.cancel();
          timers.delete(timer);
          resolve(true);
        });
      });
      if (gone) return;
    }
    const payload =
      reply.body === undefined
        ? ''
        : typeof reply.body === 'string'
          ? reply.body
          : JSON.stringify(reply.body);
    const outHeaders: Record<string, string> = {
      'content-type': typeof reply.body === 'string' ? 'text/plain' : 'application/json',
      ...reply.headers,
    };
    res.writeHead(reply.status ?? 200, outHeaders).end(payload);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}${setup.basePath}`,
    requests,
    get openConnections() {
      return sockets.size;
    },
    reply: (...replies) => {
      queue.push(...replies);
    },
    setHandler: (h) => {
      handler = h;
    },
    waitForRequests: (count) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (requests.length >= count) resolve();
          else waiters.push(check);
        };
        check();
      }),
    waitForNoConnections: () =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (sockets.size === 0) resolve();
          else waiters.push(check);
        };
        check();
      }),
    close: async () => {
      for (const t of timers) t.cancel();
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
