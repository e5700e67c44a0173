/** The reload plan: a pure diff of running jobs against the new valid and rejected jobs. */
import type { JobDefinition, RejectedJob } from './validate.js';
import { issueLines } from './validate.js';

export interface ReloadPlan {
  add: string[];
  replace: string[];
  remove: string[];
  keep: string[];
  /** Jobs of the new file that are invalid; a running one keeps its old definition (it is also in `keep`). */
  rejected: { id: string; errors: string[] }[];
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function planReload(
  running: readonly Pick<JobDefinition, 'id' | 'fingerprint'>[],
  nextValid: readonly Pick<JobDefinition, 'id' | 'fingerprint'>[],
  rejected: readonly Pick<RejectedJob, 'id' | 'index' | 'issues'>[],
): ReloadPlan {
  const next = new Map(nextValid.map((j) => [j.id, j]));
  const rejectedIds = new Set(rejected.map((r) => r.id).filter((id): id is string => id !== undefined));
  const plan: ReloadPlan = { add: [], replace: [], remove: [], keep: [], rejected: [] };
  const runningIds = new Set<string>();
  for (const job of running) {
    runningIds.add(job.id);
    const n = next.get(job.id);
    if (n) (n.fingerprint === job.fingerprint ? plan.keep : plan.replace).push(job.id);
    else if (rejectedIds.has(job.id)) plan.keep.push(job.id);
    else plan.remove.push(job.id);
  }
  for (const id of next.keys()) if (!runningIds.has(id)) plan.add.push(id);
  plan.rejected = rejected.map((r) => ({ id: r.id ?? `jobs[${r.index}]`, errors: issueLines(r.issues) }));
  plan.add.sort(byId);
  plan.replace.sort(byId);
  plan.remove.sort(byId);
  plan.keep.sort(byId);
  plan.rejected.sort((a, b) => byId(a.id, b.id));
  return plan;
}
