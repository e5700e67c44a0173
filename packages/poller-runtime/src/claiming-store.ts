/**
 * The state store of cluster mode: the `StateStore` plus what several daemons sharing one job table need.
 * The database decides due-ness and lease expiry on its own clock; a claim hands back that clock's time so
 * the holder can compute run times on it.
 */
import type { CommitOps, JobState, JobStatePatch, LeaseGrant, StateStore } from './store.js';

/** A job claimed with its lease: one round trip instead of a grant plus a read. */
export interface JobClaim {
  jobId: string;
  grant: LeaseGrant;
  state: JobState;
  /** The job's TTL as the job table holds it (written by reconcile). */
  leaseTtlMs: number;
  /** The database clock when the claim ran: the job was due by it. */
  dbNow: number;
}

export interface ClaimBatch {
  claims: JobClaim[];
  /** The database clock when the claim ran (ms since the epoch). */
  dbNow: number;
  /** When the next job not claimed here becomes due (database clock); `null`: none. */
  nextDueAt: number | null;
}

/** A job of the cluster as operators see it: its state plus who holds it. */
export interface ClusterJobRow {
  state: JobState;
  holder: string | null;
  leaseEpoch: number;
  leaseExpiresAt: number | null;
  configVersion: number;
}

/** One job of the configuration being reconciled. */
export interface ReconcileEntry {
  id: string;
  /** Canonical hash of the definition: a change replaces the job. */
  defHash: string;
  leaseTtlMs: number;
  pausedOnBoot: boolean;
  /**
   * The writes that bring the stored state in line with the definition (new source: cursor and seen set
   * cleared; new schedule: first slot). `current` is `null` for a job the table does not hold yet;
   * `applyPausedOnBoot` is true when the job is added or its `paused_on_boot` turned on.
   */
  ops(current: JobState | null, applyPausedOnBoot: boolean): CommitOps & { state: JobStatePatch };
}

export interface ReconcileResult {
  add: string[];
  replace: string[];
  remove: string[];
  keep: string[];
}

export interface ClaimingStore extends StateStore {
  /**
   * Claims up to `limit` jobs due by the database clock (`FOR UPDATE SKIP LOCKED`), only jobs whose
   * `config_version <= configVersion`, and only once the table was reconciled to at least that version.
   */
  claimDue(holder: string, options: { limit: number; configVersion: number }): Promise<ClaimBatch>;
  /** Claims one job whatever its schedule (a manual run); `null` while another holder has it. */
  claimById(jobId: string, holder: string): Promise<JobClaim | null>;
  /** When the next job becomes due (database clock, ms), for this version; `null`: none. */
  nextDueAt(configVersion: number): Promise<number | null>;
  /** The database clock (ms since the epoch). */
  now(): Promise<number>;
  /**
   * Ends every lease of `holder`, known dead (its heartbeat is stale): each epoch moves on and each job is
   * due again at its stored run time. The next claim counts a takeover. Returns the job ids.
   */
  breakLeasesOf(holder: string): Promise<string[]>;
  /**
   * Brings the job table to `configVersion` once: the first caller for a version writes, in one
   * transaction guarded by a compare-and-set; every later caller gets `null`.
   */
  reconcile(entries: readonly ReconcileEntry[], configVersion: number): Promise<ReconcileResult | null>;
  /** The version the job table was last reconciled to (0 before the first). */
  reconciledVersion(): Promise<number>;
  /** Every job row with its holder and lease expiry, by id. */
  clusterJobs(): Promise<ClusterJobRow[]>;
  clusterJob(jobId: string): Promise<ClusterJobRow | null>;
}
