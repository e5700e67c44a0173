/**
 * A real admin server for CLI end-to-end tests: `createAdminApp` + `serveAdmin` over a real poller service
 * (in-memory store, fake clock, a tiny kind), and the `agent` bin run as a child process.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createAdminApp, serveAdmin, type ServedApp } from '@agent/admin-api';
import { createMemoryLogger } from '@agent/log';
import { definePollerKind, withBaseConfig } from '@agent/poller-core';
import { createKindRegistry, createRunner, type Runner } from '@agent/poller-runtime';
import {
  createFakeClock,
  createMemoryStateStore,
  createTestDispatcher,
  createTestSnapshot,
  type FakeClock,
  type TestDispatcher,
  type TestJobSpec,
} from '@agent/poller-runtime/testing';

// prom-client is not a dependency of this package; the poller service's own copy provides the registry.
const fromPollerCore = createRequire(join(import.meta.dirname, '..', '..', 'poller-core', 'package.json'));
const { Registry } = fromPollerCore('prom-client') as { Registry: new () => object };

const BIN = join(import.meta.dirname, '..', '..', '..', 'apps', 'daemon', 'dist', 'bin.js');
export const SECRET = 'sk-test-5b7c9d1e';

export function assertBuilt(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run pnpm exec tsc -b first`);
}

export interface TestDaemon {
  url: string;
  service: Runner;
  dispatcher: TestDispatcher;
  clock: FakeClock;
  /** Items the next tick of any job returns; an Error makes the tick fail. */
  next: { items: string[]; error: Error | null };
  reloads: number;
  close(): Promise<void>;
}

const job = (id: string, over: Partial<TestJobSpec> = {}): TestJobSpec => ({
  id,
  kind: 'counter',
  agent: 'assistant',
  schedule: { every_secs: 60 },
  ...over,
  config: {
    deliver: { channel: 'chat_a', to: 'u1' },
    message_template: 'New: {title}',
    url: `https://feeds.example/${id}?token=${SECRET}`,
    headers: { Authorization: `Bearer ${SECRET}` },
    ...over.config,
  },
});

const snapshotOf = (jobs: TestJobSpec[], version: number) =>
  createTestSnapshot({ jobs, secrets: [SECRET], version });

export async function startTestDaemon(opts: { token?: string } = {}): Promise<TestDaemon> {
  const next = { items: [] as string[], error: null as Error | null };
  const kind = definePollerKind({
    kind: 'counter',
    apiVersion: 1,
    configSchema: withBaseConfig({
      additionalProperties: false,
      properties: {
        url: { type: 'string' },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
      },
    }),
    placeholders: ['title'],
    async tick() {
      if (next.error) throw next.error;
      return {
        items: next.items.map((id) => ({ id, fields: { title: `item ${id}` } })),
        cursor: { last: next.items.at(-1) ?? null },
      };
    },
  });
  const clock = createFakeClock('2026-03-01T08:00:00Z');
  const dispatcher = createTestDispatcher();
  const service = createRunner({
    snapshot: snapshotOf(
      [
        job('digest-hourly', { schedule: { cron: '0 0 * * * *', tz: 'Europe/Paris' } }),
        job('news', { failure_to: { channel: 'chat_b', to: 'ops' } }),
        job('status-page', { paused_on_boot: true, schedule: { every_secs: 300 } }),
      ],
      1,
    ),
    registry: createKindRegistry([kind]),
    store: createMemoryStateStore(),
    dispatcher,
    metrics: new Registry() as never,
    logger: createMemoryLogger('error'),
    holderId: 'host-a:4242:r1',
    clock,
    random: () => 0,
  });
  await service.start();
  const daemon = { next, reloads: 0 } as TestDaemon;
  const app = createAdminApp({
    pollers: service,
    reloadPollers: async () => {
      daemon.reloads++;
      return service.reload(
        snapshotOf(
          [
            job('digest-hourly', { schedule: { cron: '0 0 * * * *', tz: 'Europe/Paris' } }),
            job('news', { schedule: { every_secs: 120 } }),
            job('weather'),
            job('broken', { kind: 'nope' }),
          ],
          2,
        ),
      );
    },
    reloadCredentials: async () => ({ channels: [], pollers: true }),
    token: opts.token ?? null,
    redact: (t) => t.split(SECRET).join('[redacted]'),
    logger: createMemoryLogger('error'),
  });
  const served: ServedApp = await serveAdmin(app, '127.0.0.1:0');
  return Object.assign(daemon, {
    url: served.url,
    service,
    dispatcher,
    clock,
    close: async () => {
      await served.close();
      await service.stop();
    },
  });
}

export interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node apps/daemon/dist/bin.js <args>` without blocking this process's event loop. */
export function agent(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<BinResult> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    NO_COLOR: undefined,
    FORCE_COLOR: undefined,
  };
  delete env.AGENT_ADMIN_URL;
  Object.assign(env, opts.env);
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: opts.cwd ?? process.cwd(), env: env as NodeJS.ProcessEnv, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolveRun({ code, stdout, stderr });
      },
    );
  });
}
