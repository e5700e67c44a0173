import { afterEach } from 'vitest';
import { createMemoryLogger } from '@agent/log';
import { Registry } from 'prom-client';
import {
  definePollerKind,
  withBaseConfig,
  type PollerKindDefinition,
  type PollItem,
  type TickContext,
  type TickResult,
} from '@agent/poller-core';
import { createKindRegistry, createRunner, type StateStore } from '../src/index.js';
import {
  createFakeClock,
  createMemoryStateStore,
  createTestDispatcher,
  createTestSnapshot,
  type FakeClock,
  type MemoryStateStore,
  type TestJobSpec,
  type TestSnapshotOptions,
} from '../src/testing.js';
import { phaseMs } from '../src/schedule.js';

export type Step = TickResult | Error | ((ctx: TickContext) => Promise<TickResult>);

export function scriptedKind(name = 'fake', extra: Partial<PollerKindDefinition> = {}) {
  const queue: Step[] = [];
  let fallback: Step = { items: [] };
  const calls: TickContext[] = [];
  let active = 0;
  let maxActive = 0;
  const kind = definePollerKind({
    kind: name,
    apiVersion: 1,
    configSchema: withBaseConfig({
      additionalProperties: false,
      properties: { source: { type: 'string' }, allow_private_networks: { type: 'boolean' } },
    }),
    placeholders: ['title', 'n'],
    async tick(ctx) {
      calls.push(ctx);
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        const step = queue.length ? queue.shift()! : fallback;
        if (step instanceof Error) throw step;
        if (typeof step === 'function') return await step(ctx);
        return step;
      } finally {
        active--;
      }
    },
    ...extra,
  });
  return {
    kind,
    calls,
    push: (...steps: Step[]) => void queue.push(...steps),
    setDefault: (s: Step) => void (fallback = s),
    maxConcurrent: () => maxActive,
  };
}

export const items = (...ids: (string | number)[]): PollItem[] =>
  ids.map((id) => ({ id: String(id), fields: { title: `item ${id}` } }));

export function job(
  id: string,
  over: Partial<TestJobSpec> & { config?: Record<string, unknown> } = {},
): TestJobSpec {
  return {
    id,
    kind: 'fake',
    agent: 'assistant',
    schedule: { every_secs: 60 },
    ...over,
    config: {
      deliver: { channel: 'chat_a', to: 'u1' },
      message_template: 'New: {title}',
      source: 's1',
      ...over.config,
    },
  };
}

export interface HarnessOptions extends TestSnapshotOptions {
  kinds?: ReturnType<typeof scriptedKind>[];
  store?: StateStore;
  clock?: FakeClock;
  holderId?: string;
  holderGone?: (holder: string) => boolean;
  minLeaseTtlMs?: number;
  /** Scheduling rounds (default 0 here: every run at its exact time). */
  roundMs?: number;
}

/**
 * Where test clocks start: on the grid of job `j1`'s every-minute schedule, so `advance(60_000)` after its
 * first run reaches exactly its next slot (every_secs grids have a per-job phase).
 */
export const HARNESS_START = Date.parse('2026-01-01T00:00:00Z') + phaseMs('j1', 60_000);

export function harness(opts: HarnessOptions = {}) {
  const clock = opts.clock ?? createFakeClock(HARNESS_START);
  // A given store is used as is; the memory store's extra helpers are only called on the default one.
  const store = (opts.store ?? createMemoryStateStore({ now: clock.now })) as MemoryStateStore;
  const dispatcher = createTestDispatcher();
  const metrics = new Registry();
  const logger = createMemoryLogger();
  const fake = opts.kinds ?? [scriptedKind()];
  const registry = createKindRegistry(fake.map((k) => k.kind));
  const snapshot = createTestSnapshot({ settings: { default_jitter_ms: 0, breaker_threshold: 3 }, ...opts });
  const service = createRunner({
    snapshot,
    registry,
    store,
    dispatcher,
    metrics,
    logger,
    clock,
    random: () => 0,
    holderId: opts.holderId ?? 'holder-a',
    roundMs: opts.roundMs ?? 0,
    ...(opts.minLeaseTtlMs !== undefined ? { minLeaseTtlMs: opts.minLeaseTtlMs } : {}),
    ...(opts.holderGone ? { holderGone: opts.holderGone } : {}),
  });
  return { clock, store, dispatcher, metrics, logger, registry, snapshot, service, fake: fake[0]! };
}

export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const m = registry.getSingleMetric(name);
  if (!m) return undefined;
  const data = await m.get();
  const v = data.values.find((x) =>
    Object.entries(labels).every(([k, val]) => String((x.labels as Record<string, unknown>)[k]) === val),
  );
  return v?.value;
}

/**
 * `setup(opts)` for a test file: a harness with one job `j1` (failure alerts to `chat_b`/`ops`) unless `opts`
 * says otherwise, whose service is stopped after each test.
 */
export function harnessPerTest(): (opts?: HarnessOptions) => ReturnType<typeof harness> {
  const running: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of running.splice(0)) await stop();
  });
  return (opts = {}) => {
    const h = harness({ jobs: [job('j1', { failure_to: { channel: 'chat_b', to: 'ops' } })], ...opts });
    running.push(() => h.service.stop());
    return h;
  };
}
