/**
 * What `agent --check-config` prints: every issue, a summary, every job translated from the legacy mail poller
 * file and the YAML to paste into `pollers.yaml`. Pure: the daemon bin prints the lines and exits with the code.
 */
import { formatIssue, legacyJobsYaml, legacyTranslation, type LoadResult } from '@agent/config-snapshot';

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

export function renderCheckConfig(result: LoadResult): CheckConfigOutput {
  const stdout: string[] = [];
  const stderr: string[] = [];
  for (const e of result.errors) stderr.push(`error: ${formatIssue(e)}`);
  for (const w of result.warnings) stderr.push(`warning: ${formatIssue(w)}`);
  const s = result.snapshot;
  if (s) {
    const jobs = s.pollers ? `, ${s.pollers.jobs.length} poller job(s)` : '';
    stdout.push(
      result.errors.length === 0
        ? `config ok: ${s.agents.size} agent(s)${jobs}`
        : `config has errors: ${s.agents.size} valid agent(s)${jobs}`,
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
  return { stdout, stderr, exitCode: result.errors.length > 0 || !s ? 1 : 0 };
}
