/** Test helpers: a loopback JSON server, a recording logger and the real poller service around a kind. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { definePollerKind, type PollerKind, type TickContext } from '@agent/poller-core';
import type { StateStore } from '@agent/poller-core/runtime';
import {
  createMemoryLogger,
  createServiceHarness,
  type MemoryLogger as CoreMemoryLogger,
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

export type MemoryLogger = CoreMemoryLogger & { text(): string };

/** The recording logger of poller-core's test helpers, plus `text()`: every record as JSON, for leak checks. */
export function memoryLogger(): MemoryLogger {
  const l = createMemoryLogger();
  return Object.assign(l, { text: () => JSON.stringify(l.records) });
}

/** The same kind, with ticks logging to `logger` (the conformance tick helper logs nowhere). */
export function withLogger(kind: PollerKind, logger: Logger): PollerKind {
  return definePollerKind({ ...kind, tick: (ctx) => kind.tick({ ...ctx, logger }) });
}

export interface HarnessOptions {
  kind: PollerKind;
  jobs: TestJobSpec[];
  store?: StateStore;
  logger?: MemoryLogger;
  secrets?: string[];
}

/** The real poller service with a memory (or given) store, a fake clock and the test dispatcher. */
export function harness(opts: HarnessOptions) {
  return createServiceHarness(opts.kind, {
    jobs: opts.jobs,
    ...(opts.store ? { store: opts.store } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.secrets ? { secrets: opts.secrets } : {}),
  });
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
