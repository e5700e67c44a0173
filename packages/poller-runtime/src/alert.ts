/** Failure alerts to a job's `failure_to`, once per cooldown; the cooldown is stamped after delivery. */
import type { Logger } from '@agent/log';
import { safeReason } from '@agent/poller-core';
import { isLeaseLost, isStateStoreError } from './errors.js';
import type { JobState } from './store.js';
import type { TickEnv, TickWriter } from './tick-types.js';
import { keepUnrecorded } from './unrecorded.js';
import type { JobDefinition } from './validate.js';

export interface FailureAlert {
  cls: 'transient' | 'permanent';
  reason: string;
  /** Consecutive Transient errors, for the text of a breaker alert. */
  errors: number;
}

/** Sends a failure alert to `failure_to`, honouring the persisted cooldown; stamps it after delivery. */
export async function sendFailureAlert(
  env: TickEnv,
  def: JobDefinition,
  state: JobState,
  failed: FailureAlert,
  writer: Pick<TickWriter, 'write' | 'confirmLease'>,
  log: Logger,
): Promise<void> {
  const now = env.clock.now();
  const { cls, reason } = failed;
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
  if (!(await mayAlert(writer, cls, log))) return;
  const what =
    cls === 'permanent'
      ? 'was paused after a permanent error'
      : `opened its breaker after ${failed.errors} consecutive transient errors`;
  try {
    await env.dispatcher.deliver({
      agentId: def.agent,
      channel: def.failureTo.channel,
      to: def.failureTo.to,
      text: `Poller job ${def.id} (kind ${def.kind.kind}) ${what} [${cls}]: ${reason}`,
      jobId: def.id,
      itemId: `alert:${now}`,
    });
  } catch (err) {
    log.warn('poller failure alert not delivered', { reason: safeReason(err) });
    return;
  }
  try {
    await writer.write({ state: { lastFailureAlertAt: now } });
  } catch (err) {
    // Kept in memory meanwhile, so the cooldown holds in this process.
    if (isStateStoreError(err)) keepUnrecorded(env.unrecorded, def.id, { lastFailureAlertAt: now });
    log.warn('poller failure alert sent but its cooldown was not stored', { reason: safeReason(err) });
  }
}

/** A holder that may have lost its lease sends no alert; a store that cannot answer does not stop it. */
async function mayAlert(
  writer: Pick<TickWriter, 'confirmLease'>,
  cls: FailureAlert['cls'],
  log: Logger,
): Promise<boolean> {
  try {
    await writer.confirmLease?.();
    return true;
  } catch (err) {
    if (!isLeaseLost(err)) return true; // the trust window held, so the alert goes out
    log.warn('poller failure alert not sent: this process may no longer hold the lease', {
      class: cls,
      reason: safeReason(err),
    });
    return false;
  }
}
