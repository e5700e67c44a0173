/** The real poller service (registry, runner, SQLite store) with a test dispatcher and a fake clock. */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PollerKind } from '@agent/poller-core';
import {
  createKindRegistry,
  createPollerService,
  type PollerServiceOptions,
} from '@agent/poller-core/runtime';
import { createSqliteStateStore } from '@agent/poller-core/sqlite';
import {
  createFakeClock,
  createTestDispatcher,
  createTestSnapshot,
  type TestJobSpec,
  type TestSnapshotOptions,
} from '@agent/poller-core/testing';

// prom-client is poller-core's dependency; its registry is taken from there.
const promClient = createRequire(new URL('../../poller-core/package.json', import.meta.url))(
  'prom-client',
) as {
  Registry: new () => PollerServiceOptions['metrics'];
};

export interface RecordedLog {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger keeping records, structurally the `Logger` of `@agent/log`. */
export function recordingLogger(
  records: RecordedLog[] = [],
  bound: Record<string, unknown> = {},
): PollerServiceOptions['logger'] & {
  records: RecordedLog[];
  find(msg: string): RecordedLog[];
} {
  const emit = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    void records.push({ level, msg, fields: { ...bound, ...fields } });
  return {
    records,
    find: (msg) => records.filter((r) => r.msg === msg),
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (fields) => recordingLogger(records, { ...bound, ...fields }),
  };
}

export function serviceHarness(
  kind: PollerKind,
  opts: { jobs: TestJobSpec[]; start?: string } & Omit<TestSnapshotOptions, 'jobs'>,
) {
  const dir = mkdtempSync(join(tmpdir(), 'poller-kind-'));
  const clock = createFakeClock(opts.start ?? '2026-03-01T12:00:00Z');
  const store = createSqliteStateStore(join(dir, 'poller.db'), { now: clock.now });
  const dispatcher = createTestDispatcher();
  const logger = recordingLogger();
  const snapshot = createTestSnapshot({ settings: { default_jitter_ms: 0 }, ...opts });
  const service = createPollerService({
    snapshot,
    registry: createKindRegistry([kind]),
    store,
    dispatcher,
    metrics: new promClient.Registry(),
    logger,
    clock,
    random: () => 0,
    holderId: 'test-holder',
  });
  return {
    clock,
    store,
    dispatcher,
    logger,
    snapshot,
    service,
    /** Moves the fake clock and waits for the ticks it started. */
    async advance(ms: number) {
      await clock.advance(ms);
      await service.idle();
    },
    async close() {
      await service.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
