/**
 * What `agent --check-config` prints: every issue, a summary, every job translated from the legacy mail poller
 * file and the YAML to paste into `pollers.yaml`. Pure: the daemon bin runs the daemon's own checks (job
 * validation with the kind registry, start-time checks) and passes their results in.
 */
import { formatIssue, legacyJobsYaml, legacyTranslation, type LoadResult } from '@agent/config-snapshot';

/** What the daemon's own job validation said of `pollers.yaml` (absent when the subsystem is off). */
export interface CheckedJobs {
  valid: number;
  rejected: readonly { id: string; errors: readonly string[] }[];
}

export interface CheckConfigOutput {
  stdout: string[];
  stderr: string[];
  /** 1 on any error (legacy entries that cannot be translated included), else 0. */
  exitCode: number;
}

const RULES: Record<string, string> = {
  entry: 'named by the entry',
  account: 'named by its account',
  file: 'named by mail_poller.agent',
  credentials: 'inferred: the agent whose credentials.mail is this account',
  'only-agent': 'inferred: the only agent',
};

/**
 * `jobs`: the daemon's validation of every job (job issues of `result` are printed from it, once).
 * `startErrors`: what the daemon's start would refuse beyond the files (no valid agent, an admin token file).
 */
export function renderCheckConfig(
  result: LoadResult,
  jobs: CheckedJobs | null = null,
  startErrors: readonly string[] = [],
): CheckConfigOutput {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const errors = result.errors.filter((e) => jobs === null || e.scope !== 'job');
  for (const e of errors) stderr.push(`error: ${formatIssue(e)}`);
  for (const r of jobs?.rejected ?? [])
    for (const e of r.errors.length ? r.errors : ['invalid']) stderr.push(`error: job ${r.id}: ${e}`);
  for (const e of startErrors) stderr.push(`error: ${e}`);
  for (const w of result.warnings) stderr.push(`warning: ${formatIssue(w)}`);
  const failed = errors.length + (jobs?.rejected.length ?? 0) + startErrors.length;
  const s = result.snapshot;
  if (s) {
    const total = jobs ? jobs.valid + jobs.rejected.length : (s.pollers?.jobs.length ?? 0);
    const jobText = !s.pollers
      ? ''
      : !s.pollers.settings.enabled
        ? `, ${total} poller job(s) (not run: enabled is false)`
        : !jobs || failed === 0
          ? `, ${total} poller job(s)`
          : `, ${jobs.valid} of ${total} poller job(s) valid`;
    stdout.push(
      failed === 0
        ? `config ok: ${s.agents.size} agent(s)${jobText}`
        : `config has errors: ${s.agents.size} valid agent(s)${jobText}`,
    );
  }
  const t = legacyTranslation(s);
  if (t) {
    stdout.push('', `legacy mail poller ${t.file} (deprecated: it no longer runs its own loop):`);
    for (const j of t.jobs)
      stdout.push(
        j.overridden
          ? `  ${j.id} (from ${j.source}): not used, pollers.yaml defines this id`
          : `  ${j.id} (from ${j.source}): agent ${j.agent}, ${RULES[j.agentRule] ?? j.agentRule}`,
      );
    for (const r of t.rejected)
      stdout.push(`  ${r.id}: not translated, ${r.issues[0]?.message ?? 'invalid'}`);
    const yaml = legacyJobsYaml(t.jobs);
    if (yaml) {
      stdout.push(
        '',
        'To migrate, add these jobs to pollers.yaml under pollers.jobs (check every inferred agent), then delete the legacy file:',
        '',
        ...yaml.trimEnd().split('\n'),
      );
    }
  }
  return { stdout, stderr, exitCode: failed > 0 || !s ? 1 : 0 };
}
