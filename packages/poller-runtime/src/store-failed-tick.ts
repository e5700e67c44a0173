/**
 * A scheduled tick that the state store stopped before it began (the lease grant or the state read
 * failed): a Transient error of the job, counted in memory with the same backoff, breaker and failure
 * alert as any other. While the breaker is open (as this process knows it) the slot is skipped instead.
 */
import { retryAfterOf, safeReason } from '@agent/poller-core';
import { sendFailureAlert } from './alert.js';
import { breakerSkipsUntil } from './breaker.js';
import { labelsOf, tickLogger } from './job-log.js';
import { runWhileOpen } from './next-run.js';
import { jitterOf, transientPatch } from './settle.js';
import { emptyJobState } from './store.js';
import type { TickEnv, TickReport } from './tick-types.js';
import { keepUnrecorded, withUnrecorded } from './unrecorded.js';
import type { JobDefinition } from './validate.js';

export async function settleStoreFailure(
  env: TickEnv,
  def: JobDefinition,
  err: unknown,
  guard: () => void,
): Promise<TickReport> {
  const labels = labelsOf(def);
  const log = tickLogger(env.logger, def);
  // Reads often still work (a full disk); without one, what this process kept is all there is.
  const stored = await env.store.load(def.id).catch(() => null);
  const state = withUnrecorded(env.unrecorded, stored ?? emptyJobState(def.id));
  const now = env.clock.now();
  const none = { items_seen: 0, items_dispatched: 0 };
  if (stored?.paused) return { status: 'aborted', ...none, next: { paused: true, nextRunAt: null } };
  const skipUntil = breakerSkipsUntil(state, now);
  if (skipUntil !== null) {
    env.metrics.tick(labels, 'skipped');
    const wake = runWhileOpen(def.schedule, state.nominalAt, skipUntil, now, jitterOf(env));
    return { status: 'skipped', ...none, next: { paused: false, nextRunAt: wake.nextRunAt } };
  }
  const reason = env.redact(safeReason(err));
  const { patch, opened, errors } = transientPatch(
    env,
    { def, state, mode: 'scheduled' },
    { retryAfterMs: retryAfterOf(err) },
    now,
  );
  patch.lastError = reason;
  keepUnrecorded(env.unrecorded, def.id, patch);
  env.storeHealth?.tickFailed();
  env.metrics.tick(labels, 'transient');
  env.metrics.consecutiveErrors(def.id, errors);
  if (patch.breakerState !== undefined) env.metrics.breakerState(def.id, patch.breakerState);
  log.debug('poller tick failed (transient)', {
    reason,
    consecutive_errors: errors,
    breaker: opened ? 'open' : 'closed',
    recorded: 'no: the state store failed; kept in memory',
  });
  // Without a lease (the store could not grant one): the channel may still work, and the alert say so.
  if (opened) {
    const writer = {
      write: async (ops: Parameters<TickEnv['store']['commit']>[1]) => {
        guard();
        await env.store.commit(def.id, ops, null);
      },
    };
    const alertState = { ...state, consecutiveErrors: errors };
    await sendFailureAlert(env, def, alertState, { cls: 'transient', reason, errors }, writer, log);
  }
  return {
    status: 'transient',
    ...none,
    error: reason,
    next: { paused: false, nextRunAt: patch.nextRunAt ?? null },
  };
}
