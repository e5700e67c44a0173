/** Errors of the runtime itself: a holder that lost its lease, a state store that failed. */
import { PollerError, safeReason } from '@agent/poller-core';
import { codeOf } from '@agent/guarded-http';

/** A state write by a holder that no longer holds the job (stale epoch, replaced or removed job). */
export class LeaseLostError extends PollerError {
  constructor(message = 'the job lease is no longer held by this process') {
    super('POLLER_LEASE_LOST', message);
    this.name = 'LeaseLostError';
  }
}

/**
 * A call to the state store failed (SQLite: SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY past the busy timeout,
 * SQLITE_READONLY, ...). Transient: the tick is retried with the job's backoff and counts toward its breaker.
 */
export class StateStoreError extends PollerError {
  /** The store method that failed (`commit`, `acquireLease`, ...). */
  readonly operation: string;
  constructor(operation: string, cause: unknown) {
    const code = codeOf(cause);
    super(
      'POLLER_STATE_STORE',
      `the state store failed (${operation}): ${safeReason(cause)}${typeof code === 'string' ? ` [${code}]` : ''}`,
      { cause },
    );
    this.name = 'StateStoreError';
    this.operation = operation;
  }
}

export function isLeaseLost(err: unknown): boolean {
  return codeOf(err) === 'POLLER_LEASE_LOST';
}

/** A failure of the state store itself (not of the kind, nor a lost lease). */
export function isStateStoreError(err: unknown): boolean {
  return codeOf(err) === 'POLLER_STATE_STORE';
}
