/**
 * How a tick ended, as a value: the tick's own decision, which its caller records (schedule, breaker,
 * errors) with the tick's last write.
 */
import { classifyError, retryAfterOf, safeReason, type ErrorClass, type JsonValue } from '@agent/poller-core';
import { isLeaseLost } from './errors.js';
import type { CommitOps } from './store.js';

/** Counts of a tick, whatever its outcome. */
export interface TickCounts {
  seen: number;
  dispatched: number;
}

export type TickOutcome =
  | (TickCounts & {
      type: 'ok';
      /** The first tick: what the source holds now was recorded as seen, nothing delivered. */
      baseline: boolean;
      /** New items, delivered or carried over to the next tick. */
      fresh: number;
      /** The kind's cursor to store; absent while items are carried over or when the kind gave none. */
      cursor?: JsonValue;
      maxItems: number;
      /** Seen-set work of the last write (the last baseline chunk, the ids to keep, the bound). */
      seenOps: Pick<CommitOps, 'addSeen' | 'keepSeen' | 'seenLimit'>;
    })
  | (TickCounts & {
      type: 'failed';
      cls: ErrorClass;
      error: unknown;
      /** The server's wait hint (Retry-After), in ms. */
      retryAfterMs: number | undefined;
      maxItems: number;
    })
  | (TickCounts & { type: 'aborted' })
  | (TickCounts & { type: 'lease_lost'; reason: string });

export type FailedOutcome = Extract<TickOutcome, { type: 'failed' }>;

/** A tick stopped by `error`: a lost lease, or a failure classified Permanent or Transient. */
export function failure(
  error: unknown,
  counts: TickCounts,
  maxItems: number,
): FailedOutcome | Extract<TickOutcome, { type: 'lease_lost' }> {
  const { seen, dispatched } = counts;
  if (isLeaseLost(error)) return { type: 'lease_lost', reason: safeReason(error), seen, dispatched };
  return {
    type: 'failed',
    cls: classifyError(error),
    error,
    retryAfterMs: retryAfterOf(error),
    maxItems,
    seen,
    dispatched,
  };
}
