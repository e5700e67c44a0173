/** The real poller service (registry, runner, SQLite store on a temporary file) with a fake clock. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PollerKind } from '@agent/poller-core';
import { createSqliteStateStore } from '@agent/poller-runtime/sqlite';
import {
  createServiceHarness,
  type ServiceHarness,
  type TestJobSpec,
  type TestSnapshotOptions,
} from '@agent/poller-runtime/testing';

export function serviceHarness(
  kind: PollerKind,
  opts: { jobs: TestJobSpec[]; start?: string } & Omit<TestSnapshotOptions, 'jobs'>,
): ServiceHarness {
  const dir = mkdtempSync(join(tmpdir(), 'poller-kind-'));
  const h = createServiceHarness(kind, {
    ...opts,
    start: opts.start ?? '2026-03-01T12:00:00Z',
    store: (clock) => createSqliteStateStore(join(dir, 'poller.db'), { now: clock.now }),
  });
  return {
    ...h,
    async close() {
      await h.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
