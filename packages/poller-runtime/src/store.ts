/**
 * The state store interface. Everything the runner persists goes through it: one row of `poll_state`
 * per job, the bounded seen-id set, deliveries and the lease. Writes of a tick carry a `Fence`
 * (holder, epoch): the store refuses them with `LeaseLostError` once another grant exists.
 * Async so that a PostgreSQL store can implement the same interface.
 */
import type { JsonValue } from '@agent/poller-core';

export type BreakerState = 0 | 1 | 2;
export const BREAKER_CLOSED = 0 as const;
export const BREAKER_HALF_OPEN = 1 as const;
export const BREAKER_OPEN = 2 as const;

export type TickStatus = 'ok' | 'transient' | 'permanent' | 'skipped';

export interface JobState {
  jobId: string;
  /** Opaque cursor of the kind; `null` before the first tick and after reset. */
  cursor: JsonValue | null;
  /** The first tick recorded its baseline (or back-filled). */
  baselined: boolean;
  paused: boolean;
  consecutiveErrors: number;
  /** ms since the epoch; stamped only after an alert was delivered. */
  lastFailureAlertAt: number | null;
  /** When the job runs next (nominal slot plus jitter, or a retry time). */
  nextRunAt: number | null;
  /** The nominal slot the schedule grid continues from. */
  nominalAt: number | null;
  /** `Schedule.key` that `nextRunAt` was computed for. */
  scheduleKey: string | null;
  breakerState: BreakerState;
  breakerOpenedAt: number | null;
  /** Openings in a row; the open time is 60 s x 2^(openings-1), capped at 30 min. */
  breakerOpenings: number;
  /** When the half-open probe may run. */
  breakerRetryAt: number | null;
  lastStatus: TickStatus | null;
  /** Short reason of the last failure (query strings removed). */
  lastError: string | null;
  lastRunAt: number | null;
  sourceKey: string | null;
  /** `Schedule.key` of the `at` that already fired. */
  atFired: string | null;
  /** Largest item list a tick returned; sizes the seen set. */
  maxItems: number;
}

export type JobStatePatch = Partial<Omit<JobState, 'jobId'>>;

export function emptyJobState(jobId: string): JobState {
  return {
    jobId,
    cursor: null,
    baselined: false,
    paused: false,
    consecutiveErrors: 0,
    lastFailureAlertAt: null,
    nextRunAt: null,
    nominalAt: null,
    scheduleKey: null,
    breakerState: 0,
    breakerOpenedAt: null,
    breakerOpenings: 0,
    breakerRetryAt: null,
    lastStatus: null,
    lastError: null,
    lastRunAt: null,
    sourceKey: null,
    atFired: null,
    maxItems: 0,
  };
}

/** Proof of holding a job's lease. */
export interface Fence {
  holder: string;
  epoch: number;
}

export interface LeaseInfo {
  /** `null` after a release or revoke. */
  holder: string | null;
  epoch: number;
  expiresAt: number;
}

export interface LeaseGrant extends Fence {
  expiresAt: number;
  /** The previous holder's lease had expired without a release (it crashed or stalled). */
  takeover: boolean;
  previousHolder: string | null;
  /**
   * The job's state as read in the grant's own transaction, when the store reads it there (saves the tick a
   * separate read); absent: the runner reads it after the grant.
   */
  state?: JobState | null;
}

export interface DeliveryRecord {
  itemId: string;
  channel: string;
  to: string;
  at: number;
}

/** One atomic write. */
export interface CommitOps {
  state?: JobStatePatch;
  /** Clears the seen set before `addSeen`. */
  clearSeen?: boolean;
  addSeen?: readonly string[];
  /** Ids that must survive eviction (those in the latest result). */
  keepSeen?: readonly string[];
  /** Evict the oldest ids beyond this size, when the commit adds ids or gives `keepSeen`. */
  seenLimit?: number;
  delivery?: DeliveryRecord;
  /** With a fence: releases that lease in the same transaction (the last write of a scheduled tick). */
  releaseLease?: boolean;
  /** Ends any grant in the same transaction (reset): an in-flight holder can no longer write. */
  revokeLease?: boolean;
}

/** One job's start-up write: its row inserted with `initial` when missing, then `ops` applied (unfenced). */
export interface StartWrite {
  jobId: string;
  initial: JobStatePatch;
  ops: CommitOps;
}

export interface StateStore {
  load(jobId: string): Promise<JobState | null>;
  loadAll(): Promise<JobState[]>;
  /** Inserts the row with `initial` if missing; returns the stored row. */
  init(jobId: string, initial?: JobStatePatch): Promise<JobState>;
  /** Applies `ops` in one transaction. With a fence, throws `LeaseLostError` unless (holder, epoch) still holds. */
  commit(jobId: string, ops: CommitOps, fence?: Fence | null): Promise<void>;
  /**
   * The start-up writes of many jobs in one transaction (a start with thousands of jobs). Optional: without
   * it each write is an `init` and a `commit` of its own.
   */
  commitStart?(writes: readonly StartWrite[]): Promise<void>;
  /** Which of `ids` are in the job's seen set. */
  seenAmong(jobId: string, ids: readonly string[]): Promise<Set<string>>;
  seenCount(jobId: string): Promise<number>;
  /** Deliveries recorded for a job, oldest first (bounded like the seen set). */
  deliveries(jobId: string, limit?: number): Promise<DeliveryRecord[]>;
  /** Removes every row of the job (state, seen, deliveries, lease). */
  deleteJob(jobId: string): Promise<void>;
  /** Grants the lease when it is free, expired or already ours; the epoch grows with every grant. */
  acquireLease(jobId: string, holder: string, ttlMs: number): Promise<LeaseGrant | null>;
  /** Extends our lease; false when (holder, epoch) no longer holds it. */
  renewLease(jobId: string, fence: Fence, ttlMs: number): Promise<boolean>;
  releaseLease(jobId: string, fence: Fence): Promise<void>;
  /** Ends any grant: the epoch moves on, so an in-flight holder can no longer write. */
  revokeLease(jobId: string): Promise<void>;
  /**
   * Ends the grant of `holder`, known to be dead, before its TTL: the epoch moves on. False when `holder` no
   * longer holds the lease (it was released, expired into another grant, or was broken already).
   */
  breakLease(jobId: string, holder: string): Promise<boolean>;
  getLease(jobId: string): Promise<LeaseInfo | null>;
  /**
   * Whether (holder, epoch) still holds the job's lease: the check a fenced commit makes, without writing.
   * The runner asks right before each send of a scheduled tick. Optional: a store where it is not cheap
   * leaves it out, and the holder's trust window alone guards its sends.
   */
  holdsLease?(jobId: string, fence: Fence): Promise<boolean>;
  close(): Promise<void>;
}

export const DELIVERY_LOG_LIMIT = 1000;
