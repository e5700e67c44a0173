/** What both runners (single host, cluster) do with a configuration: validate its jobs, log a reload. */
import type { Logger } from '@agent/log';
import { agentDirectory, type RuntimeConfigView } from './agent-directory.js';
import { planReload, type ReloadPlan } from './plan.js';
import type { JobDefinition } from './validate.js';
import { pollersOf } from './pollers-section.js';
import type { RunnerOptions } from './runner-api.js';
import { validatePollers } from './validate.js';

export function validJobsOf(snap: RuntimeConfigView, registry: RunnerOptions['registry']) {
  const pollers = pollersOf(snap);
  const enabled = pollers?.settings.enabled !== false;
  return enabled ? validatePollers(pollers, agentDirectory(snap), registry) : { valid: [], rejected: [] };
}

/** Validates every job of `next` and plans it against the running jobs: what a reload and its preview do first. */
export function planAgainst(
  running: Iterable<{ readonly def: JobDefinition }>,
  next: RuntimeConfigView,
  registry: RunnerOptions['registry'],
) {
  const result = validJobsOf(next, registry);
  return {
    result,
    plan: planReload(
      [...running].map((rt) => rt.def),
      result.valid,
      result.rejected,
    ),
  };
}

/** A reload that changes no job (an agent edit, a saved file with the same jobs) is not news. */
export function logReload(logger: Logger, plan: ReloadPlan): void {
  const changed = plan.add.length + plan.replace.length + plan.remove.length > 0;
  (changed ? logger.info : logger.debug).call(logger, 'poller reload applied', {
    add: plan.add,
    replace: plan.replace,
    remove: plan.remove,
    keep: plan.keep.length,
    rejected: plan.rejected.length,
  });
}
