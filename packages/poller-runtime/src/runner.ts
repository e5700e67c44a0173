/**
 * One tick of one job: call the kind, then own everything after it — baseline, dedup, oldest-first
 * delivery with per-item commits, carry-over, cursor, errors, breaker and failure alerts.
 */
import type { GuardedHttp } from '@agent/guarded-http';
import { clampRetryAfter } from '@agent/guarded-http';
import type { Logger } from '@agent/log';
import { timeSlicer } from '@agent/timers';
import { sleep, type Clock } from './clock.js';
import {
  pollerHttp,
  classifyError,
  PermanentError,
  retryAfterOf,
  safeReason,
  TransientError,
  maxItemsConsidered,
  type JsonValue,
  type PollItem,
  type TickContext,
  type TickResult,
  renderTemplate,
} from '@agent/poller-core';
import type { JobLabels, PollerMetrics } from './metrics.js';
import { breakerBackoffMs, jitterBound, leaseTtlMs, transientBackoffMs, withJitter } from './schedule.js';
import { linkAbort } from './signals.js';
import {
  emptyJobState,
  type CommitOps,
  type Fence,
  type JobState,
  type JobStatePatch,
  type StateStore,
  type TickStatus,
} from './store.js';
import type { JobDefinition } from './validate.js';
import { isLeaseLost, isStateStoreError } from './errors.js';

/** Sends one rendered message. The daemon resolves the agent's binding for the channel. */
export interface Dispatcher {
  deliver(message: DeliveryRequest): Promise<void>;
}

export interface DeliveryRequest {
  agentId: string;
  channel: string;
  to: string;
  text: string;
  jobId: string;
  /** Item id, or `alert:<ms>` for failure alerts. */
  itemId: string;
  signal?: AbortSignal;
}

export interface RunnerSettings {
  default_jitter_ms: number;
  lease_ttl_factor: number;
  /** Deadline of a tick's fetch, capped at `tickDeadlineFactor` x the lease TTL. */
  tick_timeout_secs: number;
  failure_alert_cooldown_secs: number;
  breaker_threshold: number;
}

export interface RunnerEnv {
  store: StateStore;
  dispatcher: Dispatcher;
  metrics: PollerMetrics;
  logger: Logger;
  clock: Clock;
  random: () => number;
  settings(): RunnerSettings;
  http: GuardedHttp;
  /** The (agent, kind) shared resource of a job. */
  shared(def: JobDefinition): Promise<unknown>;
  /** Removes secret values from text. */
  redact(text: string): string;
  minLeaseTtlMs: number;
  /** Fraction of the lease TTL a kind's fetch may take (when below `tick_timeout_secs`). */
  tickDeadlineFactor: number;
  /**
   * Per job, the outcome fields of failed ticks that the store could not record (it was failing): they
   * count in memory until a write of the job goes through.
   */
  unrecorded?: Map<string, JobStatePatch>;
  /** Told of every tick that ended Transient because of the state store. */
  storeHealth?: { tickFailed(): void };
}

export type TickOutcome = TickStatus | 'aborted' | 'lease_lost';

export interface TickReport {
  status: TickOutcome;
  items_seen: number;
  items_dispatched: number;
  /** Short reason of a failure. */
  error?: string;
  /** The tick's last write also released the lease (`TickOptions.releaseLease`). */
  leaseReleased?: boolean;
  /** Scheduled ticks: the job's schedule after the tick's last write, so the caller need not read it. */
  next?: { paused: boolean; nextRunAt: number | null };
}

export interface TickOptions {
  /** `scheduled` ticks move the schedule; `manual` (run) leaves it as it is. */
  mode: 'scheduled' | 'manual';
  fence: Fence | null;
  /** Aborted by pause, reset, replace/remove, shutdown or lease loss. */
  signal: AbortSignal;
  /** Throws `LeaseLostError` when the job was replaced or removed (checked before every write). */
  guard(): void;
  /** The job's state, when the caller has just read it (under the lease); saves a read. */
  state?: JobState;
  /** Release the fence's lease in the tick's last write when nothing follows it (saves a transaction). */
  releaseLease?: boolean;
  /** Aborts `signal`; the deadline then uses it instead of a controller of its own. */
  abort?(reason: unknown): void;
  /**
   * Scheduled ticks: throws `LeaseLostError` when this holder may no longer act on its lease (its trust
   * window ran out, or the fence moved on). Awaited right before every send.
   */
  confirmLease?(): Promise<void>;
}

/** The seen set holds at least this many ids. */
export const SEEN_MIN = 500;
/** Ids per seen-set query and per baseline transaction. */
const SEEN_CHUNK = 1000;

/** Outcome fields of a failed tick that are kept in memory while the store cannot record them. */
const UNRECORDED_FIELDS = [
  'consecutiveErrors',
  'breakerState',
  'breakerOpenings',
  'breakerOpenedAt',
  'breakerRetryAt',
  'lastStatus',
  'lastError',
  'lastRunAt',
  'lastFailureAlertAt',
] as const satisfies readonly (keyof JobStatePatch)[];

/** The job's stored state with what the store could not record laid over it. */
export function withUnrecorded(env: RunnerEnv, state: JobState): JobState {
  const kept = env.unrecorded?.get(state.jobId);
  if (!kept) return state;
  // Another holder recorded a later run: the stored state is newer than what this process kept.
  if ((state.lastRunAt ?? 0) > (kept.lastRunAt ?? 0)) {
    env.unrecorded!.delete(state.jobId);
    return state;
  }
  return { ...state, ...kept };
}

function keepUnrecorded(env: RunnerEnv, jobId: string, patch: JobStatePatch): void {
  if (!env.unrecorded) return;
  const kept: Record<string, unknown> = { ...env.unrecorded.get(jobId) };
  for (const field of UNRECORDED_FIELDS) if (patch[field] !== undefined) kept[field] = patch[field];
  env.unrecorded.set(jobId, kept as JobStatePatch);
}

/**
 * The job's errors, breaker and (scheduled ticks) retry time after a Transient failure: `now + min(interval,
 * 5 s x 2^(n-1))` plus jitter, or the breaker's wake when it opens (again).
 */
function transientOutcome(
  env: RunnerEnv,
  def: JobDefinition,
  state: JobState,
  err: unknown,
  now: number,
  mode: TickOptions['mode'],
  base: JobStatePatch,
): { patch: JobStatePatch; opened: boolean; n: number } {
  const settings = env.settings();
  const n = state.consecutiveErrors + 1;
  const retryAfter = retryAfterOf(err);
  const waitHint = retryAfter === undefined ? 0 : clampRetryAfter(retryAfter);
  const interval = def.schedule.intervalMs(now);
  let patch: JobStatePatch = { ...base, consecutiveErrors: n, lastStatus: 'transient', lastRunAt: now };
  let opened = false;
  if (state.breakerState !== 0 || n >= settings.breaker_threshold) {
    const openings = state.breakerState !== 0 ? state.breakerOpenings + 1 : 1;
    const retryAt = now + Math.max(breakerBackoffMs(openings), waitHint);
    patch = {
      ...patch,
      breakerState: 2,
      breakerOpenings: openings,
      breakerOpenedAt: now,
      breakerRetryAt: retryAt,
    };
    if (mode === 'scheduled')
      patch = { ...patch, ...openBreakerWake(env, def, state.nominalAt, retryAt, now) };
    opened = true;
  } else if (mode === 'scheduled') {
    const bound = jitterBound(def.schedule, settings.default_jitter_ms);
    patch.nextRunAt = withJitter(
      now + Math.max(transientBackoffMs(n, interval), waitHint),
      bound,
      env.random,
    );
    patch.scheduleKey = def.schedule.key;
  }
  return { patch, opened, n };
}

function checkResult(r: unknown): TickResult {
  if (!r || typeof r !== 'object' || !Array.isArray((r as TickResult).items))
    throw new TransientError('the kind returned no item list (a bug in the kind)');
  for (const it of (r as TickResult).items)
    if (
      !it ||
      typeof it.id !== 'string' ||
      it.id === '' ||
      (typeof it.fields !== 'object' && typeof it.fields !== 'function')
    )
      throw new TransientError('the kind returned an item without a string id or fields (a bug in the kind)');
  return r as TickResult;
}

function uniqueById(items: PollItem[]): PollItem[] {
  const seen = new Set<string>();
  return items.filter((i) => (seen.has(i.id) ? false : (seen.add(i.id), true)));
}

/** Schedule fields after a finished tick. */
function nextSchedule(env: RunnerEnv, def: JobDefinition, state: JobState, now: number): JobStatePatch {
  const s = def.schedule;
  if (s.type === 'at')
    return { paused: true, atFired: s.key, nextRunAt: null, nominalAt: s.atMs ?? null, scheduleKey: s.key };
  const slot = s.slotAfter(state.nominalAt ?? now, now);
  const bound = jitterBound(s, env.settings().default_jitter_ms);
  return {
    nominalAt: slot,
    nextRunAt: slot === null ? null : withJitter(slot, bound, env.random),
    scheduleKey: s.key,
  };
}

/** Next wake while the breaker is open: the next slot (to count it skipped) or the probe time. */
export function openBreakerWake(
  env: RunnerEnv,
  def: JobDefinition,
  nominalAt: number | null,
  retryAt: number,
  now: number,
): JobStatePatch {
  const s = def.schedule;
  const slot = s.type === 'at' ? null : s.slotAfter(nominalAt ?? now, now);
  const bound = jitterBound(s, env.settings().default_jitter_ms);
  const next = slot === null ? retryAt : Math.min(withJitter(slot, bound, env.random), retryAt);
  return { nominalAt: slot ?? nominalAt, nextRunAt: next, scheduleKey: s.key };
}

const jobLabels = new WeakMap<JobDefinition, JobLabels>();

/** The job's metric labels, made once per job definition (not at every tick). */
export function labelsOf(def: JobDefinition): JobLabels {
  let l = jobLabels.get(def);
  if (!l) {
    l = { kind: def.kind.kind, agent: def.agent, job_id: def.id };
    jobLabels.set(def, l);
  }
  return l;
}

/** A child logger made on first use: most ticks log nothing. */
function lazyChild(base: Logger, fields: Record<string, unknown>): Logger {
  let real: Logger | undefined;
  const get = () => (real ??= base.child(fields));
  return {
    debug: (msg, f) => get().debug(msg, f),
    info: (msg, f) => get().info(msg, f),
    warn: (msg, f) => get().warn(msg, f),
    error: (msg, f) => get().error(msg, f),
    child: (f) => get().child(f),
  };
}

// Warning messages each job definition's kind has logged: a replaced definition starts afresh.
const kindWarnings = new WeakMap<JobDefinition, Set<string>>();

/**
 * The logger a kind gets. A warning it gives again at every tick (an item it cannot use, say) is logged once
 * per job definition and then only counted in `poller_kind_warnings_total`; other levels pass through.
 */
function kindLogger(env: RunnerEnv, def: JobDefinition, base: Logger): Logger {
  let warned = kindWarnings.get(def);
  if (!warned) kindWarnings.set(def, (warned = new Set()));
  const seen = warned;
  const wrap = (log: Logger): Logger => ({
    debug: (msg, f) => log.debug(msg, f),
    info: (msg, f) => log.info(msg, f),
    error: (msg, f) => log.error(msg, f),
    warn(msg, f) {
      env.metrics.kindWarning(labelsOf(def));
      if (seen.has(msg)) return;
      seen.add(msg);
      log.warn(msg, {
        ...f,
        repeats: 'logged once per job definition, counted in poller_kind_warnings_total',
      });
    },
    child: (fields) => wrap(log.child(fields)),
  });
  return wrap(base);
}

export async function executeTick(
  env: RunnerEnv,
  def: JobDefinition,
  opts: TickOptions,
): Promise<TickReport> {
  const labels = labelsOf(def);
  const log = lazyChild(env.logger, { job_id: def.id, kind: def.kind.kind, agent: def.agent });
  const started = env.clock.now();
  const state = withUnrecorded(
    env,
    opts.state ??
      (await env.store.load(def.id)) ??
      (await env.store.init(def.id, { sourceKey: def.sourceKey })),
  );
  // An alert sent while the store failed: its cooldown is stored with the tick's outcome.
  const keptAlertAt = env.unrecorded?.get(def.id)?.lastFailureAlertAt;
  const carried: JobStatePatch = typeof keptAlertAt === 'number' ? { lastFailureAlertAt: keptAlertAt } : {};
  const recorded = () => env.unrecorded?.delete(def.id);
  const settings = env.settings();
  const write = async (ops: Parameters<StateStore['commit']>[1]) => {
    opts.guard();
    await env.store.commit(def.id, ops, opts.fence);
  };
  const releasing = opts.releaseLease === true && opts.fence !== null;
  const released = releasing ? { leaseReleased: true } : {};
  const scheduleAfter = (patch: JobStatePatch): Pick<TickReport, 'next'> =>
    opts.mode === 'scheduled'
      ? {
          next: {
            paused: patch.paused ?? state.paused,
            nextRunAt: patch.nextRunAt !== undefined ? patch.nextRunAt : state.nextRunAt,
          },
        }
      : {};
  /** The tick's last write: it releases the lease too when asked to. */
  const finalWrite = (ops: CommitOps) => write(releasing ? { ...ops, releaseLease: true } : ops);
  const finishMetrics = (status: TickStatus, patch: JobStatePatch) => {
    env.metrics.tick(labels, status, env.clock.now() - started);
    if (patch.consecutiveErrors !== undefined) env.metrics.consecutiveErrors(def.id, patch.consecutiveErrors);
    if (patch.breakerState !== undefined) env.metrics.breakerState(def.id, patch.breakerState);
    if (patch.paused !== undefined) env.metrics.paused(def.id, patch.paused);
    if (status === 'ok') env.metrics.lastSuccess(def.id, patch.lastRunAt ?? env.clock.now());
  };

  const failure = async (
    err: unknown,
    seen: number,
    dispatched: number,
    maxItems: number,
  ): Promise<TickReport> => {
    if (isLeaseLost(err)) {
      log.warn('poller tick lost its lease; its writes are discarded', { reason: safeReason(err) });
      return { status: 'lease_lost', items_seen: seen, items_dispatched: dispatched };
    }
    const now = env.clock.now();
    const cls = classifyError(err);
    const reason = env.redact(safeReason(err));
    if (cls === 'permanent') {
      const patch: JobStatePatch = {
        ...carried,
        paused: true,
        lastStatus: 'permanent',
        lastError: reason,
        lastRunAt: now,
        maxItems,
        ...(def.schedule.type === 'at' ? { atFired: def.schedule.key, nextRunAt: null } : {}),
      };
      try {
        await write({ state: patch });
      } catch (e) {
        // Not recorded, so not paused: the store failure is the tick's error, and the next tick retries.
        if (isStateStoreError(e)) return failure(e, seen, dispatched, maxItems);
        throw e;
      }
      recorded();
      finishMetrics('permanent', patch);
      log.error('poller job paused after a permanent error', { reason });
      await alert(env, def, state, 'permanent', reason, opts, log);
      return {
        status: 'permanent',
        items_seen: seen,
        items_dispatched: dispatched,
        error: reason,
        ...scheduleAfter(patch),
      };
    }
    const { patch, opened, n } = transientOutcome(env, def, state, err, now, opts.mode, {
      ...carried,
      lastError: reason,
      maxItems,
    });
    // A store that cannot record the outcome: it counts in memory, and the job retries with the same backoff.
    let stored = true;
    try {
      // An alert (breaker opened) writes its cooldown after this; otherwise this is the last write.
      if (opened) await write({ state: patch });
      else await finalWrite({ state: patch });
      recorded();
    } catch (e) {
      if (!isStateStoreError(e)) throw e;
      stored = false;
      keepUnrecorded(env, def.id, patch);
    }
    const storeFailed = !stored || isStateStoreError(err);
    if (storeFailed) env.storeHealth?.tickFailed();
    finishMetrics('transient', patch);
    // A store outage is logged once for the whole store, not at every tick of every job.
    (storeFailed ? log.debug : log.warn).call(log, 'poller tick failed (transient)', {
      reason,
      consecutive_errors: n,
      breaker: opened ? 'open' : 'closed',
      ...(stored ? {} : { recorded: 'no: the state store failed; kept in memory' }),
    });
    if (opened) await alert(env, def, { ...state, consecutiveErrors: n }, 'transient', reason, opts, log);
    return {
      status: 'transient',
      items_seen: seen,
      items_dispatched: dispatched,
      error: reason,
      ...(releasing && !opened && stored ? { leaseReleased: true } : {}),
      ...scheduleAfter(patch),
    };
  };

  // 1. Fetch.
  const ttl = leaseTtlMs(def.schedule, settings.lease_ttl_factor, started, env.minLeaseTtlMs);
  // Absolute, not a fraction of the TTL alone: a monthly job's TTL is months.
  const deadlineMs = Math.max(
    1,
    Math.min(settings.tick_timeout_secs * 1000, Math.floor(ttl * env.tickDeadlineFactor)),
  );
  // The kind's signal: aborted by the tick's own signal or by the deadline.
  const own = opts.abort ? null : new AbortController();
  const unlink = own ? linkAbort(opts.signal, own) : () => {};
  const fetchSignal = own ? own.signal : opts.signal;
  const abortFetch = (reason: unknown) => (own ? own.abort(reason) : opts.abort?.(reason));
  let overdue: TransientError | null = null;
  const timer = env.clock.setTimer(() => {
    overdue = new TransientError(`the tick exceeded its deadline of ${deadlineMs} ms`);
    abortFetch(overdue);
  }, deadlineMs);
  const endFetch = () => {
    env.clock.clearTimer(timer);
    unlink();
  };
  let result: TickResult;
  try {
    const shared = await env.shared(def);
    const ctx: TickContext = {
      job: { id: def.id, agent: def.agent, kind: def.kind.kind },
      config: def.config,
      cursor: state.cursor,
      shared,
      http: pollerHttp(env.http, fetchSignal, def.config.allow_private_networks === true),
      signal: fetchSignal,
      logger: kindLogger(env, def, log),
      now: () => new Date(env.clock.now()),
    };
    result = checkResult(await def.kind.tick(ctx));
    if (overdue) throw overdue;
  } catch (err) {
    endFetch();
    if (!overdue && opts.signal.aborted && !isLeaseLost(opts.signal.reason)) {
      log.info('poller tick aborted', { reason: safeReason(opts.signal.reason) });
      return { status: 'aborted', items_seen: 0, items_dispatched: 0 };
    }
    const cause = overdue ?? (opts.signal.aborted ? opts.signal.reason : err);
    try {
      return await failure(cause, 0, 0, state.maxItems);
    } catch (e) {
      return failure(e, 0, 0, state.maxItems);
    }
  }
  endFetch();

  // 2. Dedup, baseline, deliver. The work is bounded by `max_items_considered` and runs in slices, so a
  // huge response never holds the event loop (or the admin API) for long.
  let seenCount = 0;
  let dispatched = 0;
  const slicer = timeSlicer();
  const cap = maxItemsConsidered(def.config);
  if (result.items.length > cap)
    kindLogger(env, def, log).warn('poller tick considered only the newest items of a large fetch', {
      considered: cap,
      dropped: result.items.length - cap,
      hint: 'raise max_items_considered if the source really lists more new items per tick',
    });
  const items = uniqueById(result.items.length > cap ? result.items.slice(-cap) : result.items);
  const allIds = items.map((i) => i.id);
  // Sized by what a tick considers now: a larger set left by an older version shrinks at the next eviction.
  const maxItems = Math.max(Math.min(state.maxItems, cap), items.length);
  const seenLimit = Math.max(SEEN_MIN, 2 * maxItems);
  try {
    const known = new Set<string>();
    for (let i = 0; i < allIds.length; i += SEEN_CHUNK) {
      const chunk = allIds.length <= SEEN_CHUNK ? allIds : allIds.slice(i, i + SEEN_CHUNK);
      for (const id of await env.store.seenAmong(def.id, chunk)) known.add(id);
      await slicer.maybeYield();
    }
    const fresh = items.filter((i) => !known.has(i.id));
    seenCount = fresh.length;
    if (seenCount) env.metrics.itemsSeen(labels, seenCount);
    const now = () => env.clock.now();
    const ok: JobStatePatch = {
      ...carried,
      consecutiveErrors: 0,
      breakerState: 0,
      breakerOpenings: 0,
      breakerOpenedAt: null,
      breakerRetryAt: null,
      lastStatus: 'ok',
      lastError: null,
      baselined: true,
      maxItems,
    };
    const cursorPatch: JobStatePatch =
      result.cursor !== undefined ? { cursor: result.cursor as JsonValue } : {};

    if (!state.baselined && !def.kind.backfillOnFirstTick) {
      const patch = {
        ...ok,
        ...cursorPatch,
        lastRunAt: now(),
        ...(opts.mode === 'scheduled' ? nextSchedule(env, def, state, now()) : {}),
      };
      // A large baseline goes in several short transactions; the state (and the eviction) comes last, so a
      // tick that dies half way simply baselines again.
      const ids = fresh.map((i) => i.id);
      let from = 0;
      for (; ids.length - from > SEEN_CHUNK; from += SEEN_CHUNK) {
        await write({ addSeen: ids.slice(from, from + SEEN_CHUNK) });
        await slicer.maybeYield();
      }
      await finalWrite({ addSeen: ids.slice(from), keepSeen: allIds, seenLimit, state: patch });
      recorded();
      finishMetrics('ok', patch);
      log.info('poller baseline recorded', { items: fresh.length });
      return {
        status: 'ok',
        items_seen: seenCount,
        items_dispatched: 0,
        ...released,
        ...scheduleAfter(patch),
      };
    }

    const template = String(def.config.message_template ?? '');
    const max =
      typeof def.config.max_per_tick === 'number' ? def.config.max_per_tick : Number.POSITIVE_INFINITY;
    const delay = typeof def.config.dispatch_delay_ms === 'number' ? def.config.dispatch_delay_ms : 0;
    const batch = fresh.slice(0, max);
    for (const [i, item] of batch.entries()) {
      if (opts.signal.aborted) break;
      if (i > 0 && delay > 0 && !(await sleep(env.clock, delay, opts.signal))) break;
      const text = renderTemplate(template, item.fields);
      // A holder stopped past its lease (SIGSTOP, a long GC pause) must not send what another holder sends.
      await opts.confirmLease?.();
      try {
        await env.dispatcher.deliver({
          agentId: def.agent,
          channel: def.deliver.channel,
          to: def.deliver.to,
          text,
          jobId: def.id,
          itemId: item.id,
          signal: opts.signal,
        });
      } catch (err) {
        const e = new TransientError(
          `delivery to channel ${def.deliver.channel} failed: ${safeReason(err)}`,
          {
            cause: err,
            ...(retryAfterOf(err) !== undefined ? { retryAfterMs: retryAfterOf(err)! } : {}),
          },
        );
        return await failure(e, seenCount, dispatched, maxItems);
      }
      // The id joins the seen set in the same transaction that records the delivery. Eviction waits for the
      // tick's last write, which passes the ids to keep once.
      await write({
        addSeen: [item.id],
        delivery: { itemId: item.id, channel: def.deliver.channel, to: def.deliver.to, at: now() },
      });
      dispatched++;
      env.metrics.itemsDispatched(labels, 1);
      if (item.onDelivered) {
        try {
          await item.onDelivered();
        } catch (err) {
          log.warn('poller item follow-up failed after delivery', {
            item_id: item.id,
            reason: env.redact(safeReason(err)),
          });
        }
      }
    }
    if (opts.signal.aborted && dispatched < batch.length) {
      log.info('poller tick stopped before delivering every item', {
        delivered: dispatched,
        left: fresh.length - dispatched,
      });
      return { status: 'aborted', items_seen: seenCount, items_dispatched: dispatched };
    }
    // Carry-over: undelivered items stay new, and the cursor waits until they are delivered.
    const carry = fresh.length > dispatched;
    const patch = {
      ...ok,
      ...(carry ? {} : cursorPatch),
      lastRunAt: now(),
      ...(opts.mode === 'scheduled' ? nextSchedule(env, def, state, now()) : {}),
    };
    await finalWrite({ ...(dispatched > 0 ? { keepSeen: allIds, seenLimit } : {}), state: patch });
    recorded();
    finishMetrics('ok', patch);
    if (dispatched || carry)
      log.info('poller items delivered', { delivered: dispatched, carried_over: fresh.length - dispatched });
    return {
      status: 'ok',
      items_seen: seenCount,
      items_dispatched: dispatched,
      ...released,
      ...scheduleAfter(patch),
    };
  } catch (err) {
    return failure(
      err instanceof Error && (err as { code?: string }).code === 'POLLER_BAD_TEMPLATE'
        ? new PermanentError(err.message)
        : err,
      seenCount,
      dispatched,
      maxItems,
    );
  }
}

/** Sends a failure alert to `failure_to`, honouring the persisted cooldown; stamps it after delivery. */
async function alert(
  env: RunnerEnv,
  def: JobDefinition,
  state: JobState,
  cls: 'transient' | 'permanent',
  reason: string,
  opts: Pick<TickOptions, 'guard' | 'fence' | 'confirmLease'>,
  log: Logger,
): Promise<void> {
  const now = env.clock.now();
  if (!def.failureTo) {
    // The failure itself is logged where it happened; without failure_to there is nothing more to do.
    log.info('poller failure alert not sent: the job has no failure_to', { class: cls });
    return;
  }
  const cooldownMs = env.settings().failure_alert_cooldown_secs * 1000;
  if (state.lastFailureAlertAt !== null && now - state.lastFailureAlertAt < cooldownMs) {
    log.info('poller failure alert suppressed by cooldown', { class: cls });
    return;
  }
  const what =
    cls === 'permanent'
      ? 'was paused after a permanent error'
      : `opened its breaker after ${state.consecutiveErrors} consecutive transient errors`;
  const text = `Poller job ${def.id} (kind ${def.kind.kind}) ${what} [${cls}]: ${reason}`;
  if (opts.confirmLease) {
    try {
      await opts.confirmLease();
    } catch (err) {
      if (isLeaseLost(err)) {
        log.warn('poller failure alert not sent: this process may no longer hold the lease', {
          class: cls,
          reason: safeReason(err),
        });
        return;
      }
      // The store could not answer for the fence; the trust window held, so the alert goes out.
    }
  }
  try {
    await env.dispatcher.deliver({
      agentId: def.agent,
      channel: def.failureTo.channel,
      to: def.failureTo.to,
      text,
      jobId: def.id,
      itemId: `alert:${now}`,
    });
  } catch (err) {
    log.warn('poller failure alert not delivered', { reason: safeReason(err) });
    return;
  }
  try {
    opts.guard();
    await env.store.commit(def.id, { state: { lastFailureAlertAt: now } }, opts.fence);
  } catch (err) {
    // Kept in memory meanwhile, so the cooldown holds in this process.
    if (isStateStoreError(err)) keepUnrecorded(env, def.id, { lastFailureAlertAt: now });
    log.warn('poller failure alert sent but its cooldown was not stored', { reason: safeReason(err) });
  }
}

/**
 * A scheduled tick that the state store stopped before it began (the lease grant or the state read
 * failed): a Transient error of the job, counted in memory with the same backoff, breaker and failure
 * alert as any other. While the breaker is open (as this process knows it) the slot is skipped instead.
 */
export async function storeFailedTick(
  env: RunnerEnv,
  def: JobDefinition,
  err: unknown,
  guard: TickOptions['guard'],
): Promise<TickReport> {
  const labels = labelsOf(def);
  const log = lazyChild(env.logger, { job_id: def.id, kind: def.kind.kind, agent: def.agent });
  // Reads often still work (a full disk); without one, what this process kept is all there is.
  const stored = await env.store.load(def.id).catch(() => null);
  const state = withUnrecorded(env, stored ?? emptyJobState(def.id));
  const now = env.clock.now();
  if (stored?.paused)
    return { status: 'aborted', items_seen: 0, items_dispatched: 0, next: { paused: true, nextRunAt: null } };
  if (state.breakerState === 2 && state.breakerRetryAt !== null && now < state.breakerRetryAt) {
    env.metrics.tick(labels, 'skipped');
    const wake = openBreakerWake(env, def, state.nominalAt, state.breakerRetryAt, now);
    return {
      status: 'skipped',
      items_seen: 0,
      items_dispatched: 0,
      next: { paused: false, nextRunAt: wake.nextRunAt ?? null },
    };
  }
  const reason = env.redact(safeReason(err));
  const { patch, opened, n } = transientOutcome(env, def, state, err, now, 'scheduled', {
    lastError: reason,
  });
  keepUnrecorded(env, def.id, patch);
  env.storeHealth?.tickFailed();
  env.metrics.tick(labels, 'transient');
  env.metrics.consecutiveErrors(def.id, n);
  if (patch.breakerState !== undefined) env.metrics.breakerState(def.id, patch.breakerState);
  log.debug('poller tick failed (transient)', {
    reason,
    consecutive_errors: n,
    breaker: opened ? 'open' : 'closed',
    recorded: 'no: the state store failed; kept in memory',
  });
  // Without a lease (the store could not grant one): the channel may still work, and the alert say so.
  if (opened)
    await alert(
      env,
      def,
      { ...state, consecutiveErrors: n },
      'transient',
      reason,
      { guard, fence: null },
      log,
    );
  return {
    status: 'transient',
    items_seen: 0,
    items_dispatched: 0,
    error: reason,
    next: { paused: false, nextRunAt: patch.nextRunAt ?? null },
  };
}
