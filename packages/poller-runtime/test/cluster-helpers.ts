/** Runners in cluster mode on one scratch schema of the test PostgreSQL, with the real clock. */
import { afterEach } from 'vitest';
import { createMemoryLogger } from '@agent/log';
import { Registry } from 'prom-client';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { sleep } from '@agent/timers';
import { createKindRegistry, createRunner, type Clock, type DueHint } from '../src/index.js';
import { createPostgresStateStore, type ClaimingStore } from '../src/postgres.js';
import {
  createTestDispatcher,
  createTestSnapshot,
  type TestJobSpec,
  type TestSnapshotOptions,
} from '../src/testing.js';
import { job, scriptedKind } from './helpers.js';

export interface ClusterNodeOptions {
  holderId: string;
  jobs: TestJobSpec[];
  kind?: ReturnType<typeof scriptedKind>;
  trusted?: () => boolean;
  version?: () => number;
  clock?: Clock;
  pollMaxMs?: number;
  maxConcurrentTicks?: number;
  /** `pollers.yaml` settings over the defaults (jitter 0). */
  settings?: TestSnapshotOptions['settings'];
  /** Wraps the store the runner uses (a store that fails on demand, say). */
  wrapStore?: (store: ClaimingStore) => ClaimingStore;
  announceDue?: (hint: DueHint) => void;
}

/** `every_secs` jobs `j0..j{n-1}`. */
export const everySecond = (n: number, secs = 1) =>
  Array.from({ length: n }, (_, i) => job(`j${i}`, { schedule: { every_secs: secs } }));

/** Polls `check` every 20 ms until it is true; throws after `ms` (generous: CI machines are busy). */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}

/** `setup()` for a test file: a scratch schema per test, and `node()` makes a cluster runner on it. */
export function clusterPerTest() {
  let scratch: ScratchSchema | null = null;
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop().catch(() => {});
    await scratch?.drop();
    scratch = null;
  });
  const schema = async () => (scratch ??= await scratchSchema('cl'));

  return async function node(o: ClusterNodeOptions) {
    const s = await schema();
    const real = await createPostgresStateStore({ pool: s.openPool(), schema: s.schema });
    const store: ClaimingStore = o.wrapStore ? o.wrapStore(real) : real;
    const kind = o.kind ?? scriptedKind();
    const dispatcher = createTestDispatcher();
    const metrics = new Registry();
    const logger = createMemoryLogger();
    const snapshot = createTestSnapshot({ jobs: o.jobs, settings: { default_jitter_ms: 0, ...o.settings } });
    const runner = createRunner({
      snapshot,
      registry: createKindRegistry([kind.kind]),
      store,
      dispatcher,
      metrics,
      logger,
      holderId: o.holderId,
      minLeaseTtlMs: 1000,
      ...(o.clock ? { clock: o.clock } : {}),
      cluster: {
        store,
        configVersion: o.version ?? (() => 1),
        trusted: o.trusted ?? (() => true),
        pollMaxMs: o.pollMaxMs ?? 100,
        maxConcurrentTicks: o.maxConcurrentTicks ?? 8,
        gaugeIntervalMs: 100,
        ...(o.announceDue ? { announceDue: o.announceDue } : {}),
      },
    });
    stops.push(() => runner.stop());
    return { runner, store, kind, dispatcher, metrics, logger, scratch: s };
  };
}
