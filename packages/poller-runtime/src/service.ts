/**
 * The poller service: one timer per job on the shared scheduler, the lease around scheduled ticks, the
 * per-job lock that keeps `run` from overlapping a tick, reload apply, and the operator API and tools.
 */
import { createGuardedHttp, type GuardedHttp } from '@agent/guarded-http';
import type { Logger } from '@agent/log';
import type { Registry } from 'prom-client';
import { monotonicNow, systemClock, type Clock } from './clock.js';
import {
  pollerHttp,
  PollerError,
  safeReason,
  canonicalJson,
  type AgentTool,
  type PollerKind,
  type ResolvedAccount,
} from '@agent/poller-core';
import { createPollerMetrics, type PollerMetrics } from './metrics.js';
import { planReload, type ReloadPlan } from './plan.js';
import type { KindRegistry } from './registry.js';
import {
  executeTick,
  labelsOf,
  openBreakerWake,
  storeFailedTick,
  withUnrecorded,
  type Dispatcher,
  type RunnerEnv,
  type RunnerSettings,
  type TickReport,
} from './runner.js';
import { jitterBound, leaseTrustMarginMs, leaseTtlMs, withJitter } from './schedule.js';
import { watchStore } from './store-health.js';
import type { Fence, JobState, JobStatePatch, StateStore, TickStatus } from './store.js';
import { agentDirectory, type RuntimeConfigView } from './agent-directory.js';
import { pollersOf } from './pollers-section.js';
import type { PollersSettings } from './pollers-schema.js';
import { issueLines, validatePollers, type JobDefinition, type RejectedJob } from './validate.js';
import { isStateStoreError, LeaseLostError } from './errors.js';
import { sameSource } from './source-key.js';

export interface PollerServiceOptions {
  snapshot: RuntimeConfigView;
  registry: KindRegistry;
  store: StateStore;
  dispatcher: Dispatcher;
  /** prom-client registry the poller series are registered on. */
  metrics: Registry;
  logger: Logger;
  /** Unique per process (e.g. `<hostname>:<pid>:<random>`); the lease holder name. */
  holderId: string;
  clock?: Clock;
  /** Uniform in [0, 1); jitter. */
  random?: () => number;
  /** HTTP client kinds get (wrapped per job); default a guarded client. */
  http?: GuardedHttp;
  /**
   * Whether a lease holder is certainly dead (a process of this host that is gone). At start its leases are
   * broken at once instead of after their TTL, which can be days. Default: never judged dead.
   */
  holderGone?: (holder: string) => boolean;
  /** TEST ONLY: lowers the 30 s lease TTL minimum. */
  minLeaseTtlMs?: number;
  /** Fraction of the lease TTL a kind's fetch may take (default 0.8), when below `tick_timeout_secs`. */
  tickDeadlineFactor?: number;
}

export type BreakerName = 'closed' | 'half-open' | 'open';

export interface JobSummary {
  id: string;
  kind: string;
  agent: string;
  schedule: string;
  paused: boolean;
  breaker: BreakerName;
  breaker_state: 0 | 1 | 2;
  consecutive_errors: number;
  last_status: TickStatus | null;
  last_error: string | null;
  last_run_at: string | null;
  next_run_at: string | null;
  /** `stale`: the job's entry in pollers.yaml is rejected and its previous definition keeps running. */
  definition: 'current' | 'stale';
  /** Why the current entry is rejected (located), while `definition` is `stale`. */
  definition_error: string | null;
}

export interface JobDetail extends JobSummary {
  /** Config with secret values redacted. */
  config: Record<string, unknown>;
  deliver: { channel: string; to: string };
  failure_to: { channel: string; to: string } | null;
  cursor: { present: boolean; bytes: number };
  seen_ids: number;
  baselined: boolean;
  last_failure_alert_at: string | null;
  lease: { holder: string | null; epoch: number; expires_at: string } | null;
}

export interface RunResult {
  status: TickStatus | 'aborted' | 'lease_lost';
  items_seen: number;
  items_dispatched: number;
  error?: string;
}

export interface PollerService {
  start(): Promise<void>;
  /** Aborts in-flight ticks, waits for them, closes shared resources. */
  stop(): Promise<void>;
  list(): Promise<JobSummary[]>;
  show(id: string): Promise<JobDetail>;
  /** Manual tick: bypasses schedule and lease, never overlaps another tick of the job in this process. */
  run(id: string): Promise<RunResult>;
  pause(id: string): Promise<JobSummary>;
  resume(id: string): Promise<JobSummary>;
  /** Clears cursor, seen set, errors and breaker; leaves `paused` as it is. */
  reset(id: string): Promise<JobSummary>;
  /** Validates every job of `next` first, then applies remove, replace, add. */
  reload(next: RuntimeConfigView): Promise<ReloadPlan>;
  /** Drops every shared (agent, kind) resource; the next use rebuilds it from `snapshot`. */
  reloadCredentials(snapshot: RuntimeConfigView): Promise<void>;
  /** The six `pollers_*` tools plus every kind's tools. */
  tools(): AgentTool[];
  /** Jobs rejected by the last start or reload. */
  rejected(): readonly RejectedJob[];
  /** The same, with located reasons (secrets redacted); `running` when a previous definition runs. */
  rejectedJobs(): { id: string; errors: string[]; running: boolean }[];
  /** Resolves when no tick is running. */
  idle(): Promise<void>;
}

interface JobRuntime {
  def: JobDefinition;
  /** Set when the job is replaced or removed: its ticks can no longer write. */
  retired: boolean;
  tick: AbortController | null;
  timer: unknown;
  lock: Promise<unknown>;
  busy: Set<Promise<unknown>>;
}

const DEFAULT_SETTINGS: RunnerSettings = {
  default_jitter_ms: 5000,
  lease_ttl_factor: 2,
  tick_timeout_secs: 120,
  failure_alert_cooldown_secs: 3600,
  breaker_threshold: 5,
};
const BREAKER_NAMES: BreakerName[] = ['closed', 'half-open', 'open'];
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

async function waitFor(ps: Promise<unknown>[]): Promise<void> {
  await Promise.allSettled(ps);
}

function tool(
  name: string,
  description: string,
  parameters: Record<string, unknown>,
  fn: (args: Record<string, unknown>, agentId: string) => Promise<unknown>,
): AgentTool {
  return {
    name,
    description,
    parameters,
    async handler(args, ctx) {
      const a = args ?? {};
      ctx.logger.info('poller tool call', {
        agent_id: ctx.agentId,
        tool: name,
        job_id: typeof a.id === 'string' ? a.id : undefined,
      });
      return fn(a, ctx.agentId);
    },
  };
}

/** When the job next does real work: while its breaker is open, the slots before the probe are only skipped. */
function nextRealRun(st: JobState): number | null {
  if (st.breakerState === 2 && st.breakerRetryAt !== null && st.nextRunAt !== null)
    return Math.max(st.nextRunAt, st.breakerRetryAt);
  return st.nextRunAt;
}

const rejectedKey = (r: RejectedJob): string => r.id ?? `jobs[${r.index}]`;

function unknownJob(id: string): PollerError {
  return new PollerError('POLLER_UNKNOWN_JOB', `no poller job "${id}"; list the jobs with pollers list`);
}

function describeSchedule(def: JobDefinition): string {
  const s = def.scheduleSpec as Record<string, unknown>;
  if ('every_secs' in s) return `every ${String(s.every_secs)}s`;
  if ('cron' in s) return `cron "${String(s.cron)}"${s.tz ? ` ${String(s.tz)}` : ' UTC'}`;
  return `at ${String(s.at)}`;
}

function redactDeep(value: unknown, redact: (t: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, redact)]));
  return value;
}

export function createPollerService(options: PollerServiceOptions): PollerService {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const logger = options.logger.child({ component: 'pollers' });
  const registry = options.registry;
  const metrics: PollerMetrics = createPollerMetrics(options.metrics);
  // Store failures become Transient errors of the jobs, and the store's health is logged once per outage.
  const { store, health: storeHealth } = watchStore(options.store, {
    metrics,
    logger,
    monotonicNow: () => monotonicNow(clock),
  });
  let ownHttp: GuardedHttp | null = null;
  const http = options.http ?? (ownHttp = createGuardedHttp({ logger }));
  let snapshot = options.snapshot;
  let settings: PollersSettings | null = pollersOf(snapshot)?.settings ?? null;
  const jobs = new Map<string, JobRuntime>();
  // One shared resource per (agent, kind), remembered with the account it was built from.
  const sharedCache = new Map<string, { promise: Promise<unknown>; account: string }>();
  let lastRejected: RejectedJob[] = [];
  let stopped = false;
  let started = false;

  // Read several times per tick: merged once per settings change.
  let merged: { from: PollersSettings | null; value: RunnerSettings } | null = null;
  const currentSettings = (): RunnerSettings => {
    if (merged?.from !== settings)
      merged = { from: settings, value: { ...DEFAULT_SETTINGS, ...settings } as RunnerSettings };
    return merged.value;
  };

  const resolveAccount = (agentId: string, kind: PollerKind): ResolvedAccount | null => {
    if (!kind.credentials) return null;
    const agents = agentDirectory(snapshot);
    const name = agents.accountName(agentId, kind.credentials);
    const config = name ? agents.accountConfig(kind.credentials, name) : undefined;
    if (!name || !config)
      throw new PollerError(
        'POLLER_NO_CREDENTIALS',
        `agent "${agentId}" has no ${kind.credentials} account, which kind "${kind.kind}" needs`,
      );
    return { name, config };
  };

  const accountFingerprint = (agentId: string, kind: PollerKind): string => {
    try {
      return canonicalJson(resolveAccount(agentId, kind));
    } catch {
      return '';
    }
  };

  const sharedFor = (agentId: string, kind: PollerKind): Promise<unknown> => {
    if (!kind.createShared) return Promise.resolve(undefined);
    const key = `${agentId}\u0000${kind.kind}`;
    let entry = sharedCache.get(key);
    if (!entry) {
      const account = resolveAccount(agentId, kind);
      const create = kind.createShared.bind(kind);
      const promise = Promise.resolve().then(() =>
        create({
          agentId,
          account,
          http: pollerHttp(http, undefined, false),
          logger: logger.child({ agent: agentId, kind: kind.kind }),
        }),
      );
      promise.catch(() => {
        if (sharedCache.get(key)?.promise === promise) sharedCache.delete(key);
      });
      entry = { promise, account: canonicalJson(account) };
      sharedCache.set(key, entry);
    }
    return entry.promise;
  };

  const closeShared = async (promises: Promise<unknown>[]) => {
    for (const p of promises) {
      try {
        const s = (await p) as { close?: () => unknown } | undefined;
        if (s && typeof s.close === 'function') await s.close();
      } catch (err) {
        logger.warn('poller shared resource failed to close', { reason: safeReason(err) });
      }
    }
  };

  const dropShared = async () => {
    const all = [...sharedCache.values()].map((e) => e.promise);
    sharedCache.clear();
    await closeShared(all);
  };

  /** After a reload: a shared resource whose account changed (a rotated secret, another account) is rebuilt. */
  const dropChangedShared = async () => {
    const stale: Promise<unknown>[] = [];
    for (const [key, entry] of sharedCache) {
      const [agentId, kindName] = key.split('\u0000') as [string, string];
      const kind = registry.get(kindName);
      if (!kind || accountFingerprint(agentId, kind) !== entry.account) {
        sharedCache.delete(key);
        stale.push(entry.promise);
      }
    }
    await closeShared(stale);
  };

  const env: RunnerEnv = {
    store,
    dispatcher: options.dispatcher,
    metrics,
    logger,
    clock,
    random,
    settings: currentSettings,
    http,
    shared: (def) => sharedFor(def.agent, def.kind),
    redact: (t) => snapshot.redact(t),
    minLeaseTtlMs: options.minLeaseTtlMs ?? 30_000,
    tickDeadlineFactor: options.tickDeadlineFactor ?? 0.8,
    unrecorded: new Map(),
    storeHealth,
  };

  const track = <T>(rt: JobRuntime, p: Promise<T>): Promise<T> => {
    rt.busy.add(p);
    void p.finally(() => rt.busy.delete(p)).catch(() => {});
    return p;
  };

  /** Runs `fn` after every earlier locked operation of the job. */
  const withLock = <T>(rt: JobRuntime, fn: () => Promise<T>): Promise<T> => {
    const p = rt.lock.then(fn, fn);
    rt.lock = p.catch(() => {});
    return track(rt, p);
  };

  const guardFor = (rt: JobRuntime) => () => {
    if (rt.retired) throw new LeaseLostError(`job ${rt.def.id} was replaced or removed`);
  };

  const writeUnfenced = async (rt: JobRuntime, patch: JobStatePatch) => {
    guardFor(rt)();
    await store.commit(rt.def.id, { state: patch });
  };

  const publishGauges = (id: string, st: JobState) => {
    metrics.consecutiveErrors(id, st.consecutiveErrors);
    metrics.breakerState(id, st.breakerState);
    metrics.paused(id, st.paused);
  };

  /** Located reasons of a rejected job, secrets redacted. */
  const reasonsOf = (r: RejectedJob): string[] => issueLines(r.issues).map((l) => snapshot.redact(l));

  /** Logs each rejection once: at start, and at a reload only when it is new or its reason changed. */
  const noteRejected = (rejected: RejectedJob[]) => {
    const before = new Map(lastRejected.map((r) => [rejectedKey(r), reasonsOf(r).join('; ')]));
    for (const r of rejected) {
      const reason = reasonsOf(r).join('; ');
      if (before.get(rejectedKey(r)) === reason) continue;
      logger.error('poller job rejected', {
        job_id: rejectedKey(r),
        reason,
        ...(r.id !== undefined && jobs.has(r.id) ? { running: 'previous definition' } : {}),
      });
    }
    lastRejected = rejected;
    metrics.rejectedJobs(rejected.length);
  };

  // ---- timers ------------------------------------------------------------------------------------

  const disarm = (rt: JobRuntime) => {
    if (rt.timer !== null) clock.clearTimer(rt.timer);
    rt.timer = null;
  };

  const armAt = (rt: JobRuntime, at: number) => {
    disarm(rt);
    if (stopped || rt.retired) return;
    const delay = Math.max(0, at - clock.now());
    // The clock waits any delay (long ones chained); an early wake means the wall clock lags the timer.
    rt.timer = clock.setTimer(() => {
      rt.timer = null;
      if (clock.now() < at) {
        armAt(rt, at);
        return;
      }
      return wake(rt);
    }, delay);
  };

  const arm = async (rt: JobRuntime) => {
    const st = await store.load(rt.def.id);
    if (!st || st.paused || st.nextRunAt === null || stopped || rt.retired) {
      disarm(rt);
      return;
    }
    armAt(rt, st.nextRunAt);
  };

  const wake = (rt: JobRuntime): Promise<unknown> =>
    withLock(rt, async () => {
      if (stopped || rt.retired) return;
      let next: TickReport['next'];
      try {
        const r = await scheduledTick(rt);
        if (r === 'armed') return;
        next = r ?? undefined;
      } catch (err) {
        if (!isStateStoreError(err) || stopped || rt.retired) {
          logger.error('poller scheduler error', { job_id: rt.def.id, reason: safeReason(err) });
          if (!stopped && !rt.retired) armAt(rt, clock.now() + 5000);
          return;
        }
        // The lease grant or the state read failed: a Transient error of the job, retried with its backoff.
        next = (await storeFailedTick(env, rt.def, err, guardFor(rt))).next;
      }
      if (next && !next.paused && next.nextRunAt !== null) armAt(rt, next.nextRunAt);
      // A store that cannot be read leaves the job without a timer otherwise.
      else await arm(rt).catch(() => armAt(rt, clock.now() + 5000));
    });

  /**
   * Returns 'armed' when it set its own wake-up (lease busy), or the job's schedule after the tick when it
   * knows it (then the caller need not read it again).
   */
  const scheduledTick = async (rt: JobRuntime): Promise<'armed' | TickReport['next'] | void> => {
    const def = rt.def;
    const now = clock.now();
    const ttl = leaseTtlMs(def.schedule, currentSettings().lease_ttl_factor, now, env.minLeaseTtlMs);
    const margin = leaseTrustMarginMs(ttl);
    // The trust window counts from the request, on the monotonic clock: neither a slow answer nor a
    // wall-clock step extends it.
    const asked = monotonicNow(clock);
    // The lease first, then the state read under it: another holder may have run this slot meanwhile.
    const grant = await store.acquireLease(def.id, options.holderId, ttl);
    if (!grant) {
      const lease = await store.getLease(def.id);
      // Another process is ticking: look again when its lease would expire.
      armAt(rt, Math.max(clock.now() + 100, (lease?.expiresAt ?? clock.now()) + 50));
      return 'armed';
    }
    const fence: Fence = { holder: grant.holder, epoch: grant.epoch };
    let trustedUntil = asked + ttl - margin;
    const confirmLease = async () => {
      const late = monotonicNow(clock) - trustedUntil;
      if (late >= 0)
        throw new LeaseLostError(
          `the lease's trust window (TTL ${ttl} ms less ${Math.round(margin)} ms) ran out ${Math.round(late)} ms ago without a renewal`,
        );
      // One indexed read: another holder may have taken over early (a wall clock stepped forward).
      if (store.holdsLease && !(await store.holdsLease(def.id, fence))) throw new LeaseLostError();
    };
    if (grant.takeover) {
      metrics.leaseTakeover(def.id);
      logger.warn('poller lease taken over after its holder expired', {
        job_id: def.id,
        previous_holder: grant.previousHolder,
        epoch: grant.epoch,
      });
    }
    let released = false;
    let renewTimer: unknown = null;
    try {
      const stored = await store.load(def.id);
      // What this process could not record while the store failed (errors, breaker) counts too.
      const st = stored && withUnrecorded(env, stored);
      const t = clock.now();
      // Paused, not due (another process ran this slot, or an early wake), replaced, or shutting down.
      if (!st || st.paused || st.nextRunAt === null || st.nextRunAt > t || rt.retired || stopped) return;
      if (st.breakerState === 2 && st.breakerRetryAt !== null && t < st.breakerRetryAt) {
        // Open breaker: the slot is counted as skipped and the job sleeps until its next slot or the probe.
        guardFor(rt)();
        const wakeAt = openBreakerWake(env, def, st.nominalAt, st.breakerRetryAt, t);
        await store.commit(
          def.id,
          { state: { ...wakeAt, lastStatus: 'skipped' }, releaseLease: true },
          fence,
        );
        released = true;
        metrics.tick(labelsOf(def), 'skipped');
        return { paused: false, nextRunAt: wakeAt.nextRunAt ?? null };
      }
      // Pause, reset, replace, remove and shutdown abort `rt.tick`.
      const tick = new AbortController();
      rt.tick = tick;
      const renewEvery = Math.max(50, Math.floor(ttl / 3));
      const renew = () => {
        renewTimer = clock.setTimer(async () => {
          if (tick.signal.aborted) return;
          const renewAsked = monotonicNow(clock);
          // null: the store failed. The next period tries again; the trust window runs out meanwhile.
          const held = await store.renewLease(def.id, fence, ttl).catch(() => null);
          if (held === false) tick.abort(new LeaseLostError());
          else {
            if (held) trustedUntil = Math.max(trustedUntil, renewAsked + ttl - margin);
            renew();
          }
        }, renewEvery);
      };
      renew();
      if (st.breakerState === 2) {
        await store.commit(def.id, { state: { breakerState: 1 } }, fence);
        metrics.breakerState(def.id, 1);
        logger.info('poller breaker half-open: probing', { job_id: def.id });
      }
      const report = await executeTick(env, def, {
        mode: 'scheduled',
        fence,
        signal: tick.signal,
        abort: (reason) => tick.abort(reason),
        guard: guardFor(rt),
        state: st,
        releaseLease: true,
        confirmLease,
      });
      released = report.leaseReleased === true;
      return report.next;
    } finally {
      if (renewTimer !== null) clock.clearTimer(renewTimer);
      rt.tick = null;
      if (!released) await store.releaseLease(def.id, fence).catch(() => {});
    }
  };

  // ---- job lifecycle -----------------------------------------------------------------------------

  /** At start: a lease still held by a dead process is taken over now, not when its TTL runs out. */
  const takeOverDeadLease = async (id: string) => {
    const lease = await store.getLease(id);
    if (!lease?.holder || lease.holder === options.holderId || lease.expiresAt <= clock.now()) return;
    if (!options.holderGone?.(lease.holder) || !(await store.breakLease(id, lease.holder))) return;
    metrics.leaseTakeover(id);
    logger.warn('poller lease taken over: its holder process is gone', {
      job_id: id,
      previous_holder: lease.holder,
    });
  };

  const startJob = async (def: JobDefinition, how: { applyPausedOnBoot: boolean }) => {
    const rt: JobRuntime = {
      def,
      retired: false,
      tick: null,
      timer: null,
      lock: Promise.resolve(),
      busy: new Set(),
    };
    jobs.set(def.id, rt);
    const now = clock.now();
    const st = await store.init(def.id, { sourceKey: def.sourceKey });
    const ops: { state: JobStatePatch; clearSeen?: boolean } = { state: {} };
    const patch = ops.state;
    if (st.sourceKey !== def.sourceKey && sameSource(st.sourceKey, def.sourceKey)) {
      // A key stored before keys were hashed, for the same source: rewritten, the cursor kept.
      patch.sourceKey = def.sourceKey;
    } else if (st.sourceKey !== def.sourceKey) {
      // The source changed: the old cursor and seen ids mean nothing for the new one.
      Object.assign(patch, { sourceKey: def.sourceKey, cursor: null, baselined: false, maxItems: 0 });
      ops.clearSeen = true;
      logger.info('poller source changed: the job will baseline again', { job_id: def.id });
    }
    const s = def.schedule;
    let atFired = st.atFired;
    if (s.type === 'at' && st.atFired !== null && st.atFired !== s.key) {
      Object.assign(patch, { atFired: null, paused: false });
      atFired = null;
    }
    if (how.applyPausedOnBoot && def.pausedOnBoot) patch.paused = true;
    if (st.scheduleKey !== s.key || (st.nextRunAt === null && !(s.type === 'at' && atFired === s.key))) {
      const first = s.type === 'at' && atFired === s.key ? null : s.firstSlot(now);
      const bound = jitterBound(s, currentSettings().default_jitter_ms);
      Object.assign(patch, {
        scheduleKey: s.key,
        nominalAt: first,
        nextRunAt: first === null ? null : withJitter(first, bound, random),
      });
    }
    await store.commit(def.id, ops);
    const after = (await store.load(def.id))!;
    publishGauges(def.id, after);
    if (!stopped) await arm(rt);
  };

  const stopJob = async (rt: JobRuntime, remove: boolean) => {
    rt.retired = true;
    rt.tick?.abort(new LeaseLostError(`job ${rt.def.id} was replaced or removed`));
    disarm(rt);
    await waitFor([...rt.busy]);
    await store.revokeLease(rt.def.id).catch(() => {});
    if (remove) {
      await store.deleteJob(rt.def.id);
      env.unrecorded!.delete(rt.def.id);
      metrics.removeJob(labelsOf(rt.def));
    }
    jobs.delete(rt.def.id);
  };

  const get = (id: string): JobRuntime => {
    const rt = jobs.get(id);
    if (!rt) throw unknownJob(id);
    return rt;
  };

  const staleReason = (id: string): string | null => {
    const r = lastRejected.find((x) => x.id === id);
    return r ? reasonsOf(r).join('; ') : null;
  };

  const summary = (rt: JobRuntime, st: JobState): JobSummary => ({
    id: rt.def.id,
    kind: rt.def.kind.kind,
    agent: rt.def.agent,
    schedule: describeSchedule(rt.def),
    paused: st.paused,
    breaker: BREAKER_NAMES[st.breakerState] ?? 'closed',
    breaker_state: st.breakerState,
    consecutive_errors: st.consecutiveErrors,
    last_status: st.lastStatus,
    last_error: st.lastError,
    last_run_at: iso(st.lastRunAt),
    next_run_at: st.paused ? null : iso(nextRealRun(st)),
    definition: staleReason(rt.def.id) === null ? 'current' : 'stale',
    definition_error: staleReason(rt.def.id),
  });

  const stateOf = async (rt: JobRuntime) =>
    withUnrecorded(
      env,
      (await store.load(rt.def.id)) ?? (await store.init(rt.def.id, { sourceKey: rt.def.sourceKey })),
    );

  const applyValidation = (snap: RuntimeConfigView) => {
    const pollers = pollersOf(snap);
    const enabled = pollers?.settings.enabled !== false;
    return enabled ? validatePollers(pollers, agentDirectory(snap), registry) : { valid: [], rejected: [] };
  };

  // ---- API ---------------------------------------------------------------------------------------

  const service: PollerService = {
    async start() {
      if (started) return;
      started = true;
      stopped = false;
      const result = applyValidation(snapshot);
      for (const def of result.valid) {
        await takeOverDeadLease(def.id);
        await startJob(def, { applyPausedOnBoot: true });
      }
      noteRejected(result.rejected);
      logger.info('poller service started', { jobs: result.valid.length, rejected: result.rejected.length });
    },

    async stop() {
      stopped = true;
      for (const rt of jobs.values()) {
        disarm(rt);
        rt.tick?.abort(new Error('shutdown'));
      }
      await waitFor([...jobs.values()].flatMap((rt) => [...rt.busy]));
      await dropShared();
      if (ownHttp) await ownHttp.close().catch(() => {});
      started = false;
    },

    async list() {
      const out: JobSummary[] = [];
      for (const id of [...jobs.keys()].sort()) {
        const rt = jobs.get(id)!;
        out.push(summary(rt, await stateOf(rt)));
      }
      return out;
    },

    async show(id) {
      const rt = get(id);
      const st = await stateOf(rt);
      const lease = await store.getLease(id);
      const cursorJson = st.cursor === null ? '' : JSON.stringify(st.cursor);
      return {
        ...summary(rt, st),
        config: redactDeep(rt.def.config, (t) => snapshot.redact(t)) as Record<string, unknown>,
        deliver: { ...rt.def.deliver },
        failure_to: rt.def.failureTo ? { ...rt.def.failureTo } : null,
        cursor: { present: st.cursor !== null, bytes: Buffer.byteLength(cursorJson) },
        seen_ids: await store.seenCount(id),
        baselined: st.baselined,
        last_failure_alert_at: iso(st.lastFailureAlertAt),
        lease: lease
          ? { holder: lease.holder, epoch: lease.epoch, expires_at: new Date(lease.expiresAt).toISOString() }
          : null,
      };
    },

    async run(id) {
      const rt = get(id);
      if (stopped) throw new PollerError('POLLER_STOPPED', 'the poller service is stopped');
      return withLock(rt, async (): Promise<RunResult> => {
        const tick = new AbortController();
        rt.tick = tick;
        let report: TickReport;
        try {
          report = await executeTick(env, rt.def, {
            mode: 'manual',
            fence: null,
            signal: tick.signal,
            guard: guardFor(rt),
          });
        } finally {
          rt.tick = null;
        }
        logger.info('poller manual run', {
          job_id: id,
          status: report.status,
          items_dispatched: report.items_dispatched,
        });
        await arm(rt);
        return report;
      });
    },

    async pause(id) {
      const rt = get(id);
      await writeUnfenced(rt, { paused: true });
      metrics.paused(id, true);
      rt.tick?.abort(new Error('paused'));
      disarm(rt);
      logger.info('poller job paused', { job_id: id });
      return summary(rt, await stateOf(rt));
    },

    async resume(id) {
      const rt = get(id);
      const st = await stateOf(rt);
      const s = rt.def.schedule;
      const now = clock.now();
      const patch: JobStatePatch = { paused: false };
      if (s.type === 'at' && st.atFired === s.key) patch.nextRunAt = null;
      else {
        const first = s.firstSlot(now);
        patch.nominalAt = first;
        patch.scheduleKey = s.key;
        patch.nextRunAt =
          first === null
            ? null
            : withJitter(first, jitterBound(s, currentSettings().default_jitter_ms), random);
        if (st.breakerState === 2 && st.breakerRetryAt !== null && patch.nextRunAt !== null)
          patch.nextRunAt = Math.min(patch.nextRunAt, st.breakerRetryAt);
      }
      await writeUnfenced(rt, patch);
      metrics.paused(id, false);
      logger.info('poller job resumed', { job_id: id });
      await arm(rt);
      return summary(rt, await stateOf(rt));
    },

    async reset(id) {
      const rt = get(id);
      rt.tick?.abort(new Error('reset'));
      await withLock(rt, async () => {
        guardFor(rt)();
        await store.commit(id, {
          clearSeen: true,
          state: {
            cursor: null,
            baselined: false,
            maxItems: 0,
            consecutiveErrors: 0,
            breakerState: 0,
            breakerOpenings: 0,
            breakerOpenedAt: null,
            breakerRetryAt: null,
            lastError: null,
          },
        });
        env.unrecorded!.delete(id);
        metrics.consecutiveErrors(id, 0);
        metrics.breakerState(id, 0);
      });
      logger.info('poller job reset: the next tick records a new baseline', { job_id: id });
      await arm(rt);
      return summary(rt, await stateOf(rt));
    },

    async reload(next) {
      const result = applyValidation(next);
      const plan = planReload(
        [...jobs.values()].map((rt) => rt.def),
        result.valid,
        result.rejected,
      );
      // Everything is validated; only now are running jobs touched.
      snapshot = next;
      await dropChangedShared();
      settings = pollersOf(next)?.settings ?? settings;
      const nextById = new Map(result.valid.map((d) => [d.id, d]));
      for (const id of plan.remove) await stopJob(jobs.get(id)!, true);
      for (const id of plan.replace) {
        const old = jobs.get(id)!;
        const def = nextById.get(id)!;
        await stopJob(old, false);
        if (old.def.kind.kind !== def.kind.kind || old.def.agent !== def.agent)
          metrics.removeJob(labelsOf(old.def));
        await startJob(def, { applyPausedOnBoot: false });
      }
      for (const id of plan.add) await startJob(nextById.get(id)!, { applyPausedOnBoot: true });
      noteRejected(result.rejected);
      // A reload that changes no job (an agent edit, a saved file with the same jobs) is not news.
      const changed = plan.add.length + plan.replace.length + plan.remove.length > 0;
      (changed ? logger.info : logger.debug).call(logger, 'poller reload applied', {
        add: plan.add,
        replace: plan.replace,
        remove: plan.remove,
        keep: plan.keep.length,
        rejected: plan.rejected.length,
      });
      return plan;
    },

    async reloadCredentials(next) {
      snapshot = next;
      await dropShared();
      logger.info('poller credentials reloaded: shared clients will be rebuilt');
    },

    tools() {
      return buildTools();
    },

    rejected: () => lastRejected,

    rejectedJobs: () =>
      lastRejected.map((r) => ({
        id: rejectedKey(r),
        errors: reasonsOf(r),
        running: r.id !== undefined && jobs.has(r.id),
      })),

    async idle() {
      for (;;) {
        const busy = [...jobs.values()].flatMap((rt) => [...rt.busy]);
        if (busy.length === 0) return;
        await waitFor(busy);
      }
    },
  };

  // ---- tools -------------------------------------------------------------------------------------

  const idParam = {
    type: 'object',
    additionalProperties: false,
    required: ['id'],
    properties: { id: { type: 'string', description: 'Job id.' } },
  };

  const anyJob = (args: Record<string, unknown>): string => {
    const id = typeof args.id === 'string' ? args.id : '';
    if (!jobs.has(id)) throw unknownJob(id);
    return id;
  };
  const ownJob = (agentId: string, args: Record<string, unknown>): string => {
    const id = anyJob(args);
    // Beyond the spec: agents see every job (spec 4.5) but change only their own; another agent's job
    // looks unknown to run, pause, resume and reset.
    if (jobs.get(id)!.def.agent !== agentId) throw unknownJob(id);
    return id;
  };

  const buildTools = (): AgentTool[] => {
    const tools: AgentTool[] = [
      tool(
        'pollers_list',
        'List every poller job and its status.',
        { type: 'object', additionalProperties: false, properties: {} },
        async () => service.list(),
      ),
      tool('pollers_show', 'Show one poller job in detail (secrets redacted).', idParam, (a) =>
        service.show(anyJob(a)),
      ),
      tool('pollers_run', 'Run one poller job now (delivers new items).', idParam, (a, agentId) =>
        service.run(ownJob(agentId, a)),
      ),
      tool('pollers_pause', 'Pause a poller job.', idParam, (a, agentId) =>
        service.pause(ownJob(agentId, a)),
      ),
      tool('pollers_resume', 'Resume a paused poller job.', idParam, (a, agentId) =>
        service.resume(ownJob(agentId, a)),
      ),
      tool(
        'pollers_reset',
        'Wipe the cursor, seen items and errors of a poller job (destructive: the next tick records a new baseline). Needs confirm: true.',
        {
          type: 'object',
          additionalProperties: false,
          required: ['id', 'confirm'],
          properties: { id: { type: 'string' }, confirm: { type: 'boolean', description: 'Must be true.' } },
        },
        async (a, agentId) => {
          const id = ownJob(agentId, a);
          if (a.confirm !== true)
            throw new PollerError(
              'POLLER_CONFIRM_REQUIRED',
              `reset of "${id}" is destructive; call again with confirm: true`,
            );
          return service.reset(id);
        },
      ),
    ];
    for (const kind of registry.list())
      for (const kt of kind.tools ?? [])
        tools.push({
          name: kt.name,
          description: kt.description,
          parameters: kt.parameters,
          async handler(args, ctx) {
            ctx.logger.info('poller tool call', { agent_id: ctx.agentId, tool: kt.name, kind: kind.kind });
            const shared = await sharedFor(ctx.agentId, kind);
            return kt.handler(args ?? {}, { ...ctx, shared });
          },
        });
    return tools;
  };

  return service;
}
