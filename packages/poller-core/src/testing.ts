/**
 * @agent/poller-core/testing — for kind authors and runner tests: the conformance suite
 * (`testPollerKind`, runs inside vitest), an in-memory state store, a fake clock, a recording
 * dispatcher and a minimal config snapshot builder.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileSchema, type ConfigSnapshot } from '@agent/config-snapshot';
import { createGuardedHttp, type GuardedHttpOptions } from '@agent/guarded-http';
import { createMemoryLogger, silentLogger, type MemoryLogger } from '@agent/log';
import { setTimer } from '@agent/timers';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Clock, TimerCallback } from './clock.js';
import { classifyError } from './errors.js';
import {
  definePollerKind,
  isPollerKind,
  type JsonValue,
  type PollerKind,
  type ResolvedAccount,
  type TickContext,
  type TickResult,
} from './kind.js';
import { createMemoryStateStore } from './memory-store.js';
import { createKindRegistry } from './registry.js';
import { pollerHttp, type DeliveryRequest, type Dispatcher } from './runner.js';
import { createPollerService, type PollerService } from './service.js';
import type { StateStore } from './store.js';
import { createTestSnapshot, type TestJobSpec, type TestSnapshotOptions } from './test-snapshot.js';
import { renderTemplate, templatePlaceholders, validateTemplate } from './template.js';

export {
  createMemoryStateStore,
  type MemoryStateStore,
  type MemoryStateStoreOptions,
} from './memory-store.js';

// ---- fake clock ------------------------------------------------------------------------------------

export interface FakeClock extends Clock {
  monotonicNow(): number;
  /** Moves time forward, firing due timers in order and letting promises settle between them. */
  advance(ms: number): Promise<void>;
  /** Advances to the next pending timer (if any) and fires it. */
  next(): Promise<boolean>;
  /** Due time of the earliest pending timer (wall clock). */
  nextTimerAt(): number | null;
  pendingTimers(): number;
  /**
   * Sets the wall clock `ms` forward (negative: back), as an NTP step or an operator would. Timers and
   * `monotonicNow()` do not move, as with real timers.
   */
  jumpWall(ms: number): void;
}

/** Lets queued promise callbacks and immediates run. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

export function createFakeClock(start: number | string = '2026-01-01T00:00:00Z'): FakeClock {
  // Timers run on the monotonic time; the wall clock is it plus an offset that jumpWall moves.
  let mono = 0;
  let wallOffset = typeof start === 'string' ? Date.parse(start) : start;
  let seq = 0;
  const timers = new Map<number, { at: number; seq: number; cb: TimerCallback }>();
  const earliest = () => {
    let best: [number, { at: number; seq: number; cb: TimerCallback }] | null = null;
    for (const e of timers)
      if (!best || e[1].at < best[1].at || (e[1].at === best[1].at && e[1].seq < best[1].seq)) best = e;
    return best;
  };
  const fire = async (id: number) => {
    const t = timers.get(id)!;
    timers.delete(id);
    mono = Math.max(mono, t.at);
    let r: unknown;
    try {
      r = t.cb();
    } catch {
      r = undefined;
    }
    if (r instanceof Promise) await Promise.race([r.catch(() => {}), settle()]);
    await settle();
  };
  const clock: FakeClock = {
    now: () => mono + wallOffset,
    monotonicNow: () => mono,
    setTimer(cb, ms) {
      const id = ++seq;
      timers.set(id, { at: mono + Math.max(0, ms), seq: id, cb });
      return id;
    },
    clearTimer(h) {
      timers.delete(h as number);
    },
    async advance(ms) {
      const target = mono + ms;
      await settle();
      for (;;) {
        const e = earliest();
        if (!e || e[1].at > target) break;
        await fire(e[0]);
      }
      mono = Math.max(mono, target);
      await settle();
    },
    async next() {
      await settle();
      const e = earliest();
      if (!e) return false;
      await fire(e[0]);
      return true;
    },
    nextTimerAt() {
      const e = earliest();
      return e ? e[1].at + wallOffset : null;
    },
    pendingTimers: () => timers.size,
    jumpWall(ms) {
      wallOffset += ms;
    },
  };
  return clock;
}

// ---- dispatcher ------------------------------------------------------------------------------------

export interface TestDispatcher extends Dispatcher {
  /** Every accepted delivery, in order. */
  readonly deliveries: DeliveryRequest[];
  /** Texts of accepted deliveries to `channel` (all channels when omitted). */
  texts(channel?: string): string[];
  /** The next `n` deliveries fail with `error` (default: a network-like error). */
  failNext(n?: number, error?: unknown): void;
  /** Deliveries matching `predicate` fail until cleared with `failWhen(null)`. */
  failWhen(predicate: ((m: DeliveryRequest) => boolean) | null, error?: unknown): void;
  /** Number of attempts, failed ones included. */
  attempts(): number;
}

export function createTestDispatcher(): TestDispatcher {
  const deliveries: DeliveryRequest[] = [];
  let failCount = 0;
  let failError: unknown = null;
  let predicate: ((m: DeliveryRequest) => boolean) | null = null;
  let predicateError: unknown = null;
  let attempts = 0;
  return {
    deliveries,
    async deliver(m) {
      attempts++;
      if (failCount > 0) {
        failCount--;
        throw failError ?? Object.assign(new Error('channel unavailable'), { code: 'CHANNEL_UNAVAILABLE' });
      }
      if (predicate?.(m))
        throw (
          predicateError ?? Object.assign(new Error('channel unavailable'), { code: 'CHANNEL_UNAVAILABLE' })
        );
      deliveries.push({ ...m, signal: undefined });
    },
    texts: (channel) =>
      deliveries.filter((d) => channel === undefined || d.channel === channel).map((d) => d.text),
    failNext(n = 1, error) {
      failCount = n;
      failError = error ?? null;
    },
    failWhen(p, error) {
      predicate = p;
      predicateError = error ?? null;
    },
    attempts: () => attempts,
  };
}

/** A fresh prom-client registry (services never use the global one). */
export function createMetricsRegistry(): Registry {
  return new Registry();
}

/** The recording logger of `@agent/log`, re-exported so kind packages need no extra dependency. */
export { createMemoryLogger, type MemoryLogger };

export { createTestSnapshot, type TestJobSpec, type TestSnapshotOptions };

// ---- conformance suite -----------------------------------------------------------------------------

export interface ConformanceSource {
  /** A full, valid job config pointing at the source. */
  config: Record<string, unknown>;
  close?(): Promise<void> | void;
}

export interface ConformanceOptions {
  /** Configs the schema and the kind's checks must accept (each a full job config). */
  validConfigs: Record<string, unknown>[];
  /** Configs the schema or the kind's checks must reject. */
  invalidConfigs: unknown[];
  /** Account handed to `createShared` (kinds with `credentials`). */
  account?: ResolvedAccount;
  /** Options of the guarded HTTP client ticks get (e.g. a resolver for fixture servers). */
  http?: GuardedHttpOptions;
  /** Sources (usually loopback fixture servers) for the tick checks. */
  scenarios?: {
    /** Answers normally and deterministically. */
    ok?: () => Promise<ConformanceSource> | ConformanceSource;
    /** Fails in a way that must be Transient (e.g. 503). */
    transient?: () => Promise<ConformanceSource> | ConformanceSource;
    /** Fails in a way that must be Permanent (e.g. 401 after refresh, 404). */
    permanent?: () => Promise<ConformanceSource> | ConformanceSource;
    /** Never answers: the tick must end promptly once its signal aborts. */
    hang?: () => Promise<ConformanceSource> | ConformanceSource;
  };
  /** How long an aborted tick may take to settle (default 1000 ms). */
  abortWithinMs?: number;
}

function checksOf(kind: PollerKind, config: unknown): string[] {
  const fn = compileSchema(kind.configSchema);
  const copy = structuredClone(config);
  if (!fn(copy)) return (fn.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`);
  const c = copy as Record<string, unknown>;
  const out =
    typeof c.message_template === 'string' ? validateTemplate(c.message_template, kind.placeholders) : [];
  return [...out, ...(kind.validate?.(c, { jobId: 'conformance', agentId: 'conformance' }) ?? [])];
}

/** Runs one tick of `kind` outside the runner, as the runner would. */
export async function runKindTick(
  kind: PollerKind,
  config: Record<string, unknown>,
  options: {
    cursor?: JsonValue | null;
    signal?: AbortSignal;
    account?: ResolvedAccount;
    http?: GuardedHttpOptions;
    shared?: unknown;
  } = {},
): Promise<TickResult> {
  const fn = compileSchema(kind.configSchema);
  const cfg = structuredClone(config);
  fn(cfg);
  const base = createGuardedHttp(options.http ?? {});
  const signal = options.signal ?? new AbortController().signal;
  const http = pollerHttp(base, signal, cfg.allow_private_networks === true);
  try {
    const shared =
      options.shared !== undefined
        ? options.shared
        : kind.createShared
          ? await kind.createShared({
              agentId: 'conformance',
              account: options.account ?? null,
              http,
              logger: silentLogger,
            })
          : undefined;
    const ctx: TickContext = {
      job: { id: 'conformance', agent: 'conformance', kind: kind.kind },
      config: cfg,
      cursor: options.cursor ?? null,
      shared,
      http,
      signal,
      logger: silentLogger,
      now: () => new Date(),
    };
    try {
      return await kind.tick(ctx);
    } finally {
      if (options.shared === undefined) await (shared as { close?: () => unknown } | undefined)?.close?.();
    }
  } finally {
    await base.close();
  }
}

async function withSource(
  make: () => Promise<ConformanceSource> | ConformanceSource,
  fn: (s: ConformanceSource) => Promise<void>,
): Promise<void> {
  const src = await make();
  try {
    await fn(src);
  } finally {
    await src.close?.();
  }
}

/**
 * Registers vitest tests that every kind must pass: definition, schema accepts/rejects, template
 * placeholders, first tick with a null cursor, cursor JSON round trip, stable string ids, prompt
 * abort, and Transient/Permanent classification (given fixture sources).
 */
export function testPollerKind(kind: PollerKind, options: ConformanceOptions): void {
  const tickOpts = {
    ...(options.account ? { account: options.account } : {}),
    ...(options.http ? { http: options.http } : {}),
  };
  describe(`poller kind conformance: ${String(kind?.kind)}`, () => {
    it('is a branded, frozen kind definition with a valid name', () => {
      expect(isPollerKind(kind)).toBe(true);
      expect(Object.isFrozen(kind)).toBe(true);
      expect(kind.kind).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(kind.apiVersion).toBe(1);
    });

    it('accepts every valid config (schema, template placeholders, kind checks)', () => {
      expect(options.validConfigs.length).toBeGreaterThan(0);
      for (const c of options.validConfigs) expect(checksOf(kind, c), JSON.stringify(c)).toEqual([]);
    });

    it('rejects every invalid config', () => {
      expect(options.invalidConfigs.length).toBeGreaterThan(0);
      for (const c of options.invalidConfigs)
        expect(checksOf(kind, c).length, JSON.stringify(c)).toBeGreaterThan(0);
    });

    const ok = options.scenarios?.ok;
    if (ok) {
      it('first tick with a null cursor returns items with unique string ids, oldest first', async () => {
        await withSource(ok, async (src) => {
          const r = await runKindTick(kind, src.config, { ...tickOpts, cursor: null });
          expect(Array.isArray(r.items)).toBe(true);
          const ids = r.items.map((i) => i.id);
          for (const id of ids) expect(typeof id === 'string' && id.length > 0).toBe(true);
          expect(new Set(ids).size).toBe(ids.length);
        });
      });

      it('ids are stable: the same source and cursor give the same ids', async () => {
        await withSource(ok, async (src) => {
          const a = await runKindTick(kind, src.config, { ...tickOpts, cursor: null });
          const b = await runKindTick(kind, src.config, { ...tickOpts, cursor: null });
          expect(b.items.map((i) => i.id)).toEqual(a.items.map((i) => i.id));
        });
      });

      it('the cursor survives a JSON round trip and is accepted by the next tick', async () => {
        await withSource(ok, async (src) => {
          const first = await runKindTick(kind, src.config, { ...tickOpts, cursor: null });
          const cursor =
            first.cursor === undefined ? null : (JSON.parse(JSON.stringify(first.cursor)) as JsonValue);
          expect(cursor).toEqual(first.cursor === undefined ? null : first.cursor);
          const second = await runKindTick(kind, src.config, { ...tickOpts, cursor });
          expect(Array.isArray(second.items)).toBe(true);
        });
      });

      it('item fields render every placeholder of the template', async () => {
        await withSource(ok, async (src) => {
          const r = await runKindTick(kind, src.config, { ...tickOpts, cursor: null });
          const template = String(src.config.message_template ?? '');
          const names = templatePlaceholders(template);
          expect(r.items.length, 'the ok scenario must return at least one item').toBeGreaterThan(0);
          for (const item of r.items) {
            const get =
              typeof item.fields === 'function'
                ? item.fields
                : (n: string) => (item.fields as Readonly<Record<string, string>>)[n];
            const missing = names.filter((n) => typeof get(n) !== 'string');
            expect(missing, `item ${item.id} has no value for these placeholders`).toEqual([]);
            expect(typeof renderTemplate(template, item.fields)).toBe('string');
          }
        });
      });
    }

    const limit = options.abortWithinMs ?? 1000;
    it(`honours an aborted signal within ${limit} ms`, async () => {
      const make = options.scenarios?.hang ?? ok ?? (() => ({ config: options.validConfigs[0]! }));
      await withSource(make, async (src) => {
        const ac = new AbortController();
        const started = Date.now();
        const p = runKindTick(kind, src.config, { ...tickOpts, signal: ac.signal }).then(
          () => 'resolved',
          () => 'rejected',
        );
        setTimer(
          () => ac.abort(new Error('aborted by the conformance suite')),
          options.scenarios?.hang ? 50 : 0,
        );
        const outcome = await p;
        expect(['resolved', 'rejected']).toContain(outcome);
        expect(Date.now() - started).toBeLessThan(limit + (options.scenarios?.hang ? 50 : 0));
        if (options.scenarios?.hang) expect(outcome).toBe('rejected');
      });
    });

    const transient = options.scenarios?.transient;
    if (transient)
      it('maps a transient source failure to a Transient error', async () => {
        await withSource(transient, async (src) => {
          const err = await runKindTick(kind, src.config, tickOpts).then(
            () => null,
            (e: unknown) => e,
          );
          expect(err).not.toBeNull();
          expect(classifyError(err)).toBe('transient');
        });
      });

    const permanent = options.scenarios?.permanent;
    if (permanent)
      it('maps a permanent source failure to a Permanent error (code POLLER_PERMANENT)', async () => {
        await withSource(permanent, async (src) => {
          const err = await runKindTick(kind, src.config, tickOpts).then(
            () => null,
            (e: unknown) => e,
          );
          expect((err as { code?: string } | null)?.code).toBe('POLLER_PERMANENT');
        });
      });
  });
}

export interface ServiceHarnessOptions extends Omit<TestSnapshotOptions, 'jobs'> {
  jobs: TestJobSpec[];
  /** A store to use (e.g. a SQLite store on a temporary file); default an in-memory store on the fake clock. */
  store?: StateStore | ((clock: FakeClock) => StateStore);
  logger?: MemoryLogger;
  /** Start of the fake clock. */
  start?: number | string;
}

export interface ServiceHarness {
  clock: FakeClock;
  store: StateStore;
  dispatcher: TestDispatcher;
  logger: MemoryLogger;
  snapshot: ConfigSnapshot;
  service: PollerService;
  /** Moves the fake clock and waits for the ticks it started. */
  advance(ms: number): Promise<void>;
  /** Stops the service and closes the store. */
  close(): Promise<void>;
}

/**
 * The real poller service around one or more kinds: registry, runner, scheduler and store, with a fake clock,
 * no jitter, the test dispatcher and a recording logger. For a kind package's own end-to-end tests.
 */
export function createServiceHarness(
  kinds: PollerKind | readonly PollerKind[],
  opts: ServiceHarnessOptions,
): ServiceHarness {
  const { jobs, store: storeOpt, logger: loggerOpt, start, settings, ...snapshotOpts } = opts;
  const clock = createFakeClock(start ?? '2026-01-01T00:00:00Z');
  const store =
    typeof storeOpt === 'function'
      ? storeOpt(clock)
      : (storeOpt ?? createMemoryStateStore({ now: clock.now }));
  const dispatcher = createTestDispatcher();
  const logger = loggerOpt ?? createMemoryLogger();
  const snapshot = createTestSnapshot({
    ...snapshotOpts,
    settings: { default_jitter_ms: 0, ...settings },
    jobs,
  });
  const service = createPollerService({
    snapshot,
    registry: createKindRegistry(Array.isArray(kinds) ? kinds : [kinds]),
    store,
    dispatcher,
    metrics: createMetricsRegistry(),
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
    async advance(ms) {
      await clock.advance(ms);
      await service.idle();
    },
    async close() {
      await service.stop();
      await store.close();
    },
  };
}

// ---- loopback HTTP server and tick logger for kind tests -------------------------------------------

export interface RecordedHttpRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RecordingServer {
  url: string;
  requests: RecordedHttpRequest[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 (or `host`), port 0, that records every request before `handle` answers it. */
export async function startRecordingServer(
  handle: (req: RecordedHttpRequest, res: ServerResponse) => void,
  host = '127.0.0.1',
): Promise<RecordingServer> {
  const requests: RecordedHttpRequest[] = [];
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

/** The same kind, with its ticks logging to `logger` (`runKindTick` logs nowhere). */
export function withTickLogger(kind: PollerKind, logger: TickContext['logger']): PollerKind {
  return definePollerKind({ ...kind, tick: (ctx) => kind.tick({ ...ctx, logger }) });
}
