/** Test helpers: a loopback JSON server, a recording logger and the real poller service around a kind. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { definePollerKind, type PollerKind, type TickContext } from '@agent/poller-core';
import {
  createKindRegistry,
  createPollerService,
  type PollerServiceOptions,
  type StateStore,
} from '@agent/poller-core/runtime';
import {
  createFakeClock,
  createMemoryStateStore,
  createTestDispatcher,
  createTestSnapshot,
  type TestJobSpec,
} from '@agent/poller-core/testing';

export type Logger = TickContext['logger'];

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface TestServer {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1, port 0, that records every request before `handle` answers it. */
export async function startServer(
  handle: (req: RecordedRequest, res: ServerResponse) => void,
  host = '127.0.0.1',
): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(rec);
      handle(rec, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface LogRecord {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

export interface MemoryLogger extends Logger {
  records: LogRecord[];
  find(msg: string): LogRecord[];
  text(): string;
}

export function memoryLogger(): MemoryLogger {
  const records: LogRecord[] = [];
  const make = (bound: Record<string, unknown>): MemoryLogger => {
    const emit = (level: LogRecord['level']) => (msg: string, fields?: Record<string, unknown>) => {
      records.push({ level, msg, fields: { ...bound, ...fields } });
    };
    return {
      records,
      find: (msg) => records.filter((r) => r.msg === msg),
      text: () => JSON.stringify(records),
      debug: emit('debug'),
      info: emit('info'),
      warn: emit('warn'),
      error: emit('error'),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make({});
}

/** The same kind, with ticks logging to `logger` (the conformance tick helper logs nowhere). */
export function withLogger(kind: PollerKind, logger: Logger): PollerKind {
  return definePollerKind({ ...kind, tick: (ctx) => kind.tick({ ...ctx, logger }) });
}

// prom-client as poller-core resolves it: the registry must be the one its metrics module uses.
const requireFromCore = createRequire(new URL('../../poller-core/package.json', import.meta.url));
const { Registry } = requireFromCore('prom-client') as {
  Registry: new () => PollerServiceOptions['metrics'];
};

export interface HarnessOptions {
  kind: PollerKind;
  jobs: TestJobSpec[];
  store?: StateStore;
  logger?: MemoryLogger;
  secrets?: string[];
}

/** The real poller service with a memory (or given) store, a fake clock and the test dispatcher. */
export function harness(opts: HarnessOptions) {
  const clock = createFakeClock('2026-01-01T00:00:00Z');
  const store = opts.store ?? createMemoryStateStore({ now: clock.now });
  const dispatcher = createTestDispatcher();
  const logger = opts.logger ?? memoryLogger();
  const snapshot = createTestSnapshot({
    settings: { default_jitter_ms: 0 },
    jobs: opts.jobs,
    ...(opts.secrets ? { secrets: opts.secrets } : {}),
  });
  const service = createPollerService({
    snapshot,
    registry: createKindRegistry([opts.kind]),
    store,
    dispatcher,
    metrics: new Registry(),
    logger,
    clock,
    random: () => 0,
    holderId: 'holder-test',
  });
  return { clock, store, dispatcher, logger, service };
}

export function job(id: string, kind: string, config: Record<string, unknown>): TestJobSpec {
  return {
    id,
    kind,
    agent: 'assistant',
    schedule: { every_secs: 60 },
    failure_to: { channel: 'chat_b', to: 'ops' },
    config: { deliver: { channel: 'chat_a', to: 'u1' }, ...config },
  };
}
