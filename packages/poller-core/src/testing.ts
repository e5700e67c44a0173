/**
 * @agent/poller-core/testing — for kind authors: the conformance suite every kind must pass
 * (`testPollerKind`, runs inside vitest), `runKindTick` (one tick outside the runner), a loopback recording
 * server, a tick logger, and helpers to run a real server as a child process. It needs
 * `@agent/guarded-http` (the HTTP client ticks get) and `vitest`.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGuardedHttp, type GuardedHttpOptions } from '@agent/guarded-http';
import { setTimer } from '@agent/timers';
import { describe, expect, it } from 'vitest';
import { classifyError } from './errors.js';
import { pollerHttp } from './http.js';
import {
  definePollerKind,
  isPollerKind,
  type JsonValue,
  type PollerKind,
  type ResolvedAccount,
  type TickContext,
  type TickResult,
} from './kind.js';
import { compileSchema } from '@agent/json-schema';
import { renderTemplate, templatePlaceholders, validateTemplate } from './template.js';

export { freeLoopbackPort, stopByPid, waitForPort } from './local-server.js';

/** A tick logger that drops everything (the conformance checks read results, not logs). */
const silentLogger: TickContext['logger'] = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};

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
