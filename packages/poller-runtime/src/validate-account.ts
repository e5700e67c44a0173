/** A job's checks that need its agent's provider account: the kind's `validateWithAccount`, located. */
import type { ConfigIssue } from '@agent/config-snapshot';
import type { KindConfigProblem, PollerKind, ResolvedAccount } from '@agent/poller-core';
import type { AgentDirectory } from './agent-directory.js';
import type { LoadedJob } from './pollers-section.js';

/** The kind's checks that need the agent's account, located under `config`; never throws. */
export function accountIssues(
  job: LoadedJob,
  kind: PollerKind,
  config: Record<string, unknown>,
  account: ResolvedAccount,
  agents: AgentDirectory,
): ConfigIssue[] {
  if (!kind.validateWithAccount) return [];
  let problems: KindConfigProblem[];
  try {
    problems = kind.validateWithAccount(config, { jobId: job.spec.id, agentId: job.spec.agent, account });
  } catch (err) {
    problems = [{ path: [], message: `kind check failed: ${(err as Error).message}` }];
  }
  // The kind saw resolved secrets: its words are redacted before they reach a log or the CLI.
  return problems.map((p) =>
    job.issueAt(
      ['config', ...p.path],
      agents.redact(p.message),
      p.fix === undefined ? undefined : agents.redact(p.fix),
      'POLLER_INVALID_CONFIG',
    ),
  );
}
