/** What the reload pipeline knows of a part of the daemon that follows the configuration. */
import type { ConfigSnapshot, LoadResult, RestartChange } from '@agent/config-snapshot';
import type { ReloadPlan } from '@agent/poller-runtime';

/** A poller job the new configuration rejects. */
interface RejectedJobReport {
  jobId: string;
  /** Located reasons (`file:line:col path: message [CODE] (fix: ...)`), secrets redacted. */
  reasons: string[];
  /** A previous definition of the job keeps running. */
  running: boolean;
}

/** A changed field of a subsystem's own files that waits for a restart: as the config loader reports its own. */
export type RestartReport = Omit<RestartChange, 'agentId'>;

/** What a subsystem made of a new snapshot, reported by value to whoever triggered the reload. */
export interface ApplyReport {
  rejectedJobs?: readonly RejectedJobReport[];
  /** Changed fields of the subsystem's own files that need a restart (not applied): why, and which file. */
  restartRequired?: readonly RestartReport[];
  /** The poller reload plan (`POST /admin/pollers/reload` answers it). */
  plan?: ReloadPlan;
}

export interface Subsystem {
  readonly name: string;
  /** After a reload swapped the snapshot. */
  apply?(next: ConfigSnapshot, prev: ConfigSnapshot, result: LoadResult): Promise<ApplyReport | void>;
  /** A reload found nothing changed: what the subsystem reports of the running snapshot, applying nothing. */
  status?(current: ConfigSnapshot, result: LoadResult): Promise<ApplyReport | void>;
  /** A dry run: what `apply(next)` would report, changing nothing. */
  preview?(next: ConfigSnapshot): Promise<ApplyReport | void>;
  stop?(graceMs: number): Promise<void>;
}
