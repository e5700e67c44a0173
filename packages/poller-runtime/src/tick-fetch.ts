/** The first step of a tick: call the kind under the tick's deadline and check what it returned. */
import {
  pollerHttp,
  safeReason,
  TransientError,
  type TickContext,
  type TickResult,
} from '@agent/poller-core';
import { isLeaseLost } from './errors.js';
import { kindLogger } from './job-log.js';
import { failure, type TickOutcome } from './outcome.js';
import { leaseTtlMs } from './schedule.js';
import { linkAbort } from './signals.js';
import type { TickEnv, TickRun } from './tick-types.js';

/** The fetch deadline: `tick_timeout_secs`, or less when the lease is short. Absolute, not a fraction of the TTL alone: a monthly job's TTL is months. */
function fetchDeadlineMs(env: TickEnv, run: TickRun): number {
  const settings = env.settings();
  const ttl = leaseTtlMs(run.def.schedule, settings.lease_ttl_factor, run.startedAt, env.minLeaseTtlMs);
  return Math.max(1, Math.min(settings.tick_timeout_secs * 1000, Math.floor(ttl * env.tickDeadlineFactor)));
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

/** Calls the kind; a failure, an abort or an overrun deadline ends the tick with that outcome. */
export async function fetchItems(env: TickEnv, run: TickRun): Promise<TickResult | TickOutcome> {
  const { def, signal, log } = run;
  const deadlineMs = fetchDeadlineMs(env, run);
  // The kind's signal: aborted by the tick's own signal or by the deadline.
  const own = run.abort ? null : new AbortController();
  const unlink = own ? linkAbort(signal, own) : () => {};
  const fetchSignal = own ? own.signal : signal;
  let overdue: TransientError | null = null;
  const timer = env.clock.setTimer(() => {
    overdue = new TransientError(`the tick exceeded its deadline of ${deadlineMs} ms`);
    if (own) own.abort(overdue);
    else run.abort?.(overdue);
  }, deadlineMs);
  try {
    const shared = await env.shared(def);
    const ctx: TickContext = {
      job: { id: def.id, agent: def.agent, kind: def.kind.kind },
      config: def.config,
      cursor: run.state.cursor,
      shared,
      http: pollerHttp(env.http, fetchSignal, def.config.allow_private_networks === true),
      signal: fetchSignal,
      logger: kindLogger(env.metrics, def, log),
      now: () => new Date(env.clock.now()),
    };
    const result = checkResult(await def.kind.tick(ctx));
    if (overdue) throw overdue;
    return result;
  } catch (err) {
    if (!overdue && signal.aborted && !isLeaseLost(signal.reason)) {
      log.info('poller tick aborted', { reason: safeReason(signal.reason) });
      return { type: 'aborted', seen: 0, dispatched: 0 };
    }
    return failure(
      overdue ?? (signal.aborted ? signal.reason : err),
      { seen: 0, dispatched: 0 },
      run.state.maxItems,
    );
  } finally {
    env.clock.clearTimer(timer);
    unlink();
  }
}
