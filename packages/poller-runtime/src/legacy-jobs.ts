/**
 * Legacy job files: a file from before `pollers.yaml` (e.g. the mail poller's `plugins/mail-poller.yaml`)
 * whose entries are translated into jobs and merged into `pollers.jobs`. The runtime owns the merge; the
 * kind that knows the old format owns the translation (`LegacyJobSource`). An explicit `pollers.yaml` job
 * with the same id wins.
 */
import {
  issueAt,
  validateAt,
  type ConfigIssue,
  type SectionAgent,
  type SourceFile,
} from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { PollerJob } from './pollers-schema.js';

type Segments = readonly (string | number)[];

/** What a legacy source is given to translate its file. */
export interface LegacyContext {
  readonly agents: readonly SectionAgent[];
  /** The longest job id allowed; a translated id must fit. */
  readonly maxJobIdLength: number;
  /** An issue located at `path` of the legacy file. */
  issueAt(
    path: Segments,
    issue: { code: string; message: string; hint: string; jobId?: string },
  ): ConfigIssue;
  /** The schema's issues for `value` (the whole file), located in the file. */
  validate(schema: object, value: unknown): ConfigIssue[];
}

/** One legacy entry as a job. */
export interface TranslatedLegacyJob {
  id: string;
  /** YAML path of the legacy entry, e.g. `mail_poller.accounts.work`. */
  source: string;
  sourcePath: (string | number)[];
  agent: string;
  /** How the agent was found, in words (`named by the entry`, `inferred: the only agent`, ...). */
  agentRule: string;
  /** The job as it belongs in `pollers.yaml` under `pollers.jobs`. */
  job: Record<string, unknown>;
}

export interface LegacyTranslation {
  jobs: TranslatedLegacyJob[];
  /** Entries that could not be translated. */
  rejected: { id: string; issues: ConfigIssue[] }[];
  /** Every issue (file-level ones and those of `rejected`). */
  issues: ConfigIssue[];
}

/** Registered by a kind package that replaces an older file format. */
export interface LegacyJobSource {
  /** Config-relative path, e.g. `plugins/mail-poller.yaml`. */
  readonly file: string;
  /** Name in issues (`plugin` field), e.g. `mail-poller`. */
  readonly label: string;
  /** Logged at warn once per translated job that runs, at boot and at every reload. */
  readonly deprecation: string;
  /** How `--check-config` names the file, e.g. `legacy mail poller`. */
  readonly title: string;
  translate(value: unknown, ctx: LegacyContext): LegacyTranslation;
  /** A path inside a translated job as the path of the legacy field it came from (for located issues). */
  legacyPath(jobPath: Segments): Segments;
}

/** What the operator is told about one legacy file: every translated entry, overridden ones marked. */
export interface LegacyReport {
  title: string;
  file: string;
  deprecation: string;
  jobs: (TranslatedLegacyJob & { overridden: boolean })[];
  /** Ids of translated jobs that run (not overridden by `pollers.yaml`). */
  ids: string[];
  rejected: { id: string; issues: ConfigIssue[] }[];
}

/** Runs a source's translation on its file, with issues located in it. */
export function translateLegacyFile(
  source: LegacyJobSource,
  src: SourceFile,
  agents: readonly SectionAgent[],
  maxJobIdLength: number,
): LegacyTranslation {
  const base = { scope: 'plugin' as const, plugin: source.label };
  return source.translate(structuredClone(src.value ?? {}), {
    agents,
    maxJobIdLength,
    issueAt: (path, i) =>
      issueAt(src, path, { ...base, ...(i.jobId ? { scope: 'job' as const } : {}), ...i }),
    validate: (schema, value) => validateAt(schema, value, src, [], base),
  });
}

/** An issue inside a translated job, pointed at the legacy field it came from. */
export function legacyIssueAt(
  source: LegacyJobSource,
  src: SourceFile,
  t: TranslatedLegacyJob,
): (path: Segments, message: string, hint?: string, code?: string) => ConfigIssue {
  return (p, message, hint, code = 'CONFIG_INVALID_VALUE') =>
    issueAt(src, [...t.sourcePath, ...source.legacyPath(p)], {
      scope: 'job',
      jobId: t.id,
      code,
      message: `${message} (translated from the legacy file ${source.file})`,
      ...(hint ? { hint } : {}),
    });
}

/** The `pollers.yaml` text for translated jobs that are not overridden there. */
export function legacyJobsYaml(report: LegacyReport): string {
  const list: PollerJob[] = report.jobs.filter((j) => !j.overridden).map((j) => j.job as PollerJob);
  if (list.length === 0) return '';
  // Loaded here: a daemon that never prints legacy jobs does not keep a YAML writer in memory.
  const { stringify } = createRequire(import.meta.url)('yaml') as typeof Yaml;
  return stringify({ pollers: { jobs: list } }, { lineWidth: 0 });
}

/** Logs the deprecation at warn, once per translated job that runs; returns their ids. */
export function warnLegacyJobs(reports: readonly LegacyReport[], logger: Logger): string[] {
  const ids: string[] = [];
  for (const r of reports)
    for (const id of r.ids) {
      logger.warn(r.deprecation, { job_id: id, file: r.file });
      ids.push(id);
    }
  return ids;
}
