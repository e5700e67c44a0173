/** Jobs the last start or reload rejected: logged once each, counted in a gauge, shown to operators. */
import type { Logger } from '@agent/log';
import type { PollerMetrics } from './metrics.js';
import { issueLines, type RejectedJob } from './validate.js';

export interface RejectedJobs {
  /** Replaces the list; logs each rejection that is new or whose reason changed. */
  note(rejected: RejectedJob[]): void;
  all(): readonly RejectedJob[];
  /** Why the current entry of a running job is rejected; `null` when it is not. */
  staleReason(id: string): string | null;
  described(): { id: string; errors: string[]; running: boolean }[];
}

const keyOf = (r: RejectedJob): string => r.id ?? `jobs[${r.index}]`;

export function createRejectedJobs(deps: {
  logger: Logger;
  metrics: PollerMetrics;
  redact(text: string): string;
  running(id: string): boolean;
}): RejectedJobs {
  let last: RejectedJob[] = [];
  /** Located reasons of a rejected job, secrets redacted. */
  const reasonsOf = (r: RejectedJob): string[] => issueLines(r.issues).map((l) => deps.redact(l));
  const isRunning = (r: RejectedJob) => r.id !== undefined && deps.running(r.id);

  return {
    note(rejected) {
      const before = new Map(last.map((r) => [keyOf(r), reasonsOf(r).join('; ')]));
      for (const r of rejected) {
        const reason = reasonsOf(r).join('; ');
        if (before.get(keyOf(r)) === reason) continue;
        deps.logger.error('poller job rejected', {
          job_id: keyOf(r),
          reason,
          ...(isRunning(r) ? { running: 'previous definition' } : {}),
        });
      }
      last = rejected;
      deps.metrics.rejectedJobs(rejected.length);
    },
    all: () => last,
    staleReason(id) {
      const r = last.find((x) => x.id === id);
      return r ? reasonsOf(r).join('; ') : null;
    },
    described: () => last.map((r) => ({ id: keyOf(r), errors: reasonsOf(r), running: isRunning(r) })),
  };
}
