/**
 * What `agent --check-config` prints: every issue, a summary, every job translated from the legacy mail poller
 * file and the YAML to paste into `pollers.yaml`. Pure: the daemon bin runs the daemon's own checks (job
 * validation with the kind registry, start-time checks) and passes their results in.
 */
import { formatIssue, type LoadResult } from '@agent/config-snapshot';

/** What the daemon's own job validation said of `pollers.yaml`. */
export interface CheckedJobs {
  valid: number;
  rejected: readonly { id: string; errors: readonly string[] }[];
}

/** A legacy job file whose entries the daemon translates into jobs, as the operator is told about it. */
export interface LegacyFileReport {
  /** e.g. `legacy mail poller` */
  title: string;
  file: string;
  jobs: readonly { id: string; source: string; agent: string; agentRule: string; overridden: boolean }[];
  rejected: readonly { id: string; message: string }[];
  /** The `pollers.yaml` text of the translated jobs that are not overridden; empty when none. */
  yaml: string;
}

/** The poller subsystem's part of the check (absent when `pollers.yaml` and legacy files are absent). */
export interface CheckedPollers {
  enabled: boolean;
  /** Jobs of the file(s), valid or not. */
  total: number;
  /** The daemon's validation; `null` when it did not run (the subsystem is disabled). */
  jobs: CheckedJobs | null;
  legacy: readonly LegacyFileReport[];
}

export interface CheckConfigOutput {
  stdout: string[];
  stderr: string[];
  /** 1 on any error (legacy entries that cannot be translated included), else 0. */
  exitCode: number;
}

/**
 * `pollers`: the daemon's validation of every job (job issues of `result` are printed from it, once).
 * `startErrors`: what the daemon's start would refuse beyond the files (no valid agent, an admin token file).
 */
export function renderCheckConfig(
  result: LoadResult,
  pollers: CheckedPollers | null = null,
  startErrors: readonly string[] = [],
): CheckConfigOutput {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const jobs = pollers?.jobs ?? null;
  const errors = result.errors.filter((e) => jobs === null || e.scope !== 'job');
  for (const e of errors) stderr.push(`error: ${formatIssue(e)}`);
  for (const r of jobs?.rejected ?? [])
    for (const e of r.errors.length ? r.errors : ['invalid']) stderr.push(`error: job ${r.id}: ${e}`);
  for (const e of startErrors) stderr.push(`error: ${e}`);
  for (const w of result.warnings) stderr.push(`warning: ${formatIssue(w)}`);
  const failed = errors.length + (jobs?.rejected.length ?? 0) + startErrors.length;
  const s = result.snapshot;
  if (s) {
    const total = jobs ? jobs.valid + jobs.rejected.length : (pollers?.total ?? 0);
    const jobText = !pollers
      ? ''
      : !pollers.enabled
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
  for (const t of pollers?.legacy ?? []) {
    stdout.push('', `${t.title} ${t.file} (deprecated: it no longer runs its own loop):`);
    for (const j of t.jobs)
      stdout.push(
        j.overridden
          ? `  ${j.id} (from ${j.source}): not used, pollers.yaml defines this id`
          : `  ${j.id} (from ${j.source}): agent ${j.agent}, ${j.agentRule}`,
      );
    for (const r of t.rejected) stdout.push(`  ${r.id}: not translated, ${r.message}`);
    const yaml = t.yaml;
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
