/**
 * `pollers.yaml`, owned here: the section reader the daemon registers with the config loader. It checks the
 * settings and each job's envelope (id, kind, agent, schedule, ...), each job on its own, merges the jobs of
 * legacy files, and keeps positions so that every later issue (the kind's) points into the file.
 */
import {
  holdsReference,
  issueAt,
  validateAt,
  type ConfigIssue,
  type IssueInput,
  type SectionContext,
  type SectionReader,
  type SectionResult,
  type SourceFile,
} from '@agent/config-snapshot';
import {
  legacyIssueAt,
  translateLegacyFile,
  type LegacyJobSource,
  type LegacyReport,
} from './legacy-jobs.js';
import {
  explainSchedule,
  JOB_ID_MAX_LENGTH,
  jobSchema,
  pollersFileSchema,
  type PollerJob,
  type PollersFile,
  type PollersSettings,
} from './pollers-schema.js';

type Segments = readonly (string | number)[];
/** What a job's issues need of its file (to name it and locate a path in it). */
type JobFile = Pick<SourceFile, 'display' | 'locate'>;

export const POLLERS_SECTION = 'pollers';
export const POLLERS_FILE = 'pollers.yaml';

/** One job whose envelope is valid; the kind checks `config`. */
export interface LoadedJob {
  readonly index: number;
  readonly spec: Readonly<PollerJob>;
  /** Builds an issue located at `path` inside this job (for the kind's own validation). */
  issueAt(path: Segments, message: string, hint?: string, code?: string): ConfigIssue;
}

export interface EnvelopeRejectedJob {
  /** Absent when the entry has no usable id. */
  id?: string;
  index: number;
  issues: ConfigIssue[];
}

/** What the reader made of `pollers.yaml` (and legacy files): kept in `snapshot.sections`. */
export interface PollersSection {
  readonly file: string;
  readonly settings: Readonly<PollersSettings>;
  readonly jobs: readonly LoadedJob[];
  /** Jobs whose envelope is invalid. */
  readonly rejected: readonly EnvelopeRejectedJob[];
  /** Legacy files whose jobs were merged in, for the deprecation log and `--check-config`. */
  readonly legacy: readonly LegacyReport[];
}

/** Codes of issues this reader reports beside the config loader's generic ones. */
export const POLLERS_FILE_CODES = {
  CONFIG_DUPLICATE_JOB: {
    meaning: 'Several jobs share an id; all of them are rejected.',
    action: 'Give each job its own id.',
  },
  CONFIG_LEGACY_AGENT: {
    meaning: 'A job of a legacy file (e.g. `plugins/mail-poller.yaml`) whose agent cannot be inferred.',
    action: 'Add `agent: <id>` to the legacy entry, or move the job to `pollers.yaml`.',
  },
} as const;

export interface PollersSectionOptions {
  /** Legacy files whose entries become jobs (the kind that knew the old format supplies the translation). */
  legacy?: readonly LegacyJobSource[];
}

/** The section reader of `pollers.yaml` for `loadConfig`'s `sections`. */
/**
 * The size cap of `pollers.yaml`: a job takes 300-600 bytes, so the 4 MiB of every other file would refuse
 * a legitimate file of about 10,000 jobs; 64 MiB holds well over 100,000.
 */
const POLLERS_FILE_MAX_BYTES = 64 * 1024 * 1024;

export function pollersSectionReader(options: PollersSectionOptions = {}): SectionReader<PollersSection> {
  const legacy = options.legacy ?? [];
  return {
    name: POLLERS_SECTION,
    files: [POLLERS_FILE, ...legacy.map((l) => l.file)],
    maxFileBytes: POLLERS_FILE_MAX_BYTES,
    read: (ctx) => readPollersSection(ctx, legacy),
  };
}

/** The section of a snapshot (or of anything that carries `sections`), `null` when `pollers.yaml` is absent. */
export function pollersOf(snapshot: {
  readonly sections: ReadonlyMap<string, unknown>;
}): PollersSection | null {
  return (snapshot.sections.get(POLLERS_SECTION) as PollersSection | null | undefined) ?? null;
}

function readPollersSection(
  ctx: SectionContext,
  legacy: readonly LegacyJobSource[],
): SectionResult<PollersSection> {
  if (ctx.unreadable.has(POLLERS_FILE)) return { value: null, issues: [], keepPrevious: true };
  const src = ctx.files.get(POLLERS_FILE);
  const issues: ConfigIssue[] = [];
  let section: PollersSection | null = null;
  if (src) {
    const read = readPollersFile(src, ctx, issues);
    // An invalid settings block: nothing is known of the jobs, the running ones stay (legacy ones too).
    if (!read) return { value: null, issues, keepPrevious: true };
    section = read;
  }
  for (const source of legacy) {
    const file = ctx.files.get(source.file);
    if (!file) continue;
    section = mergeLegacy(section, source, file, ctx, issues);
  }
  return { value: section, issues, keepPrevious: false };
}

function readPollersFile(src: SourceFile, ctx: SectionContext, issues: ConfigIssue[]): PollersSection | null {
  const base = { scope: 'section' as const, section: POLLERS_SECTION };
  const value = (src.value ?? {}) as { pollers?: Record<string, unknown> };
  const rawJobs = value?.pollers && typeof value.pollers === 'object' ? value.pollers.jobs : undefined;
  // Settings without jobs: each job is checked on its own below.
  const sink: ConfigIssue[] = [];
  const settingsOnly =
    value && typeof value === 'object' && value.pollers && typeof value.pollers === 'object'
      ? { ...value, pollers: { ...value.pollers, jobs: Array.isArray(rawJobs) ? [] : rawJobs } }
      : value;
  const resolved = ctx.resolveRefs(src, settingsOnly, [], base, sink) as PollersFile;
  if (sink.length === 0) sink.push(...validateAt(pollersFileSchema, resolved, src, [], base));
  issues.push(...sink);
  if (sink.length > 0) return null;
  const { jobs: _none, ...settings } = resolved.pollers;
  const jobs: LoadedJob[] = [];
  const rejected: EnvelopeRejectedJob[] = [];
  // What the jobs' issues need of the file: not its parsed tree, which the section outlives.
  const where: JobFile = { display: src.display, locate: src.locate };
  (Array.isArray(rawJobs) ? rawJobs : []).forEach((raw, index) => {
    const r = readJob(src, where, ctx, raw, index);
    if ('spec' in r) jobs.push(r);
    else rejected.push(r);
  });
  rejectDuplicates(src, jobs, rejected);
  for (const r of rejected) issues.push(...r.issues);
  rejected.sort((a, b) => a.index - b.index);
  return { file: src.display, settings, jobs, rejected, legacy: [] };
}

function readJob(
  src: SourceFile,
  where: JobFile,
  ctx: SectionContext,
  raw: unknown,
  index: number,
): LoadedJob | EnvelopeRejectedJob {
  const path: Segments = ['pollers', 'jobs', index];
  // An id too long to be valid is no name for the job: it would flood every log line and list.
  const rawId = raw && typeof raw === 'object' ? (raw as { id?: unknown }).id : undefined;
  const id = typeof rawId === 'string' && rawId.length <= JOB_ID_MAX_LENGTH ? rawId : undefined;
  const jobBase = { scope: 'job' as const, section: POLLERS_SECTION, ...(id ? { jobId: id } : {}) };
  const sink: ConfigIssue[] = [];
  const job = resolveJob(ctx, src, raw, path, jobBase, sink);
  if (sink.length === 0)
    sink.push(...validateAt(jobSchema, job, src, path, jobBase, { explainOneOf: explainSchedule }));
  if (sink.length > 0) return { ...(id ? { id } : {}), index, issues: sink };
  return new FileJob(where, index, job as PollerJob, id);
}

/**
 * A job with its references resolved. Its mappings and lists that hold no reference are the parsed file's
 * own (frozen) nodes, not copies: the section is kept as long as its snapshot runs, and a copy of each
 * job's schedule and config weighed about 0.15 KB. The job itself is a new mapping, where the job schema
 * fills in its defaults; it fills in none deeper down (a test holds it to that). `fromEntries` defines own
 * properties: a `__proto__` key stays a key.
 */
function resolveJob(
  ctx: SectionContext,
  src: SourceFile,
  raw: unknown,
  path: Segments,
  base: Omit<IssueInput, 'code' | 'message'>,
  sink: ConfigIssue[],
): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return ctx.resolveRefs(src, raw, path, base, sink);
  return Object.fromEntries(
    Object.entries(raw).flatMap(([key, value]) => {
      const resolved = holdsReference(value)
        ? ctx.resolveRefs(src, value, [...path, key], base, sink)
        : value;
      // A reference that fails leaves its value out, as `resolveRefs` does.
      return resolved === undefined ? [] : [[key, resolved]];
    }),
  );
}

/**
 * A job of `pollers.yaml` whose envelope is valid. A class, not a literal with an `issueAt` closure: the
 * section is kept as long as its snapshot runs, and a closure per job kept its own path, issue fields and
 * context (about 0.2 KB of heap a job), and the file's whole parsed tree through it.
 */
class FileJob implements LoadedJob {
  constructor(
    private readonly src: JobFile,
    readonly index: number,
    readonly spec: Readonly<PollerJob>,
    /** The id as written (the envelope's issues name it so), absent when unusable. */
    private readonly id: string | undefined,
  ) {}

  issueAt(p: Segments, message: string, hint?: string, code = 'CONFIG_INVALID_VALUE'): ConfigIssue {
    return issueAt(this.src, ['pollers', 'jobs', this.index, ...p], {
      scope: 'job',
      section: POLLERS_SECTION,
      ...(this.id ? { jobId: this.id } : {}),
      code,
      message,
      ...(hint ? { hint } : {}),
    });
  }
}

/** Duplicate ids reject every entry that shares the id. */
function rejectDuplicates(src: SourceFile, jobs: LoadedJob[], rejected: EnvelopeRejectedJob[]): void {
  const byId = new Map<string, number[]>();
  for (const j of jobs) byId.set(j.spec.id, [...(byId.get(j.spec.id) ?? []), j.index]);
  for (const r of rejected) if (r.id) byId.set(r.id, [...(byId.get(r.id) ?? []), r.index]);
  for (const [id, indexes] of byId) {
    if (indexes.length < 2) continue;
    for (const index of indexes) {
      const issue = issueAt(src, ['pollers', 'jobs', index, 'id'], {
        scope: 'job',
        section: POLLERS_SECTION,
        jobId: id,
        code: 'CONFIG_DUPLICATE_JOB',
        message: `job id "${id}" is used by ${indexes.length} jobs`,
        hint: 'give every job its own id',
      });
      const loaded = jobs.findIndex((j) => j.index === index);
      if (loaded >= 0) jobs.splice(loaded, 1);
      const r = rejected.find((x) => x.index === index);
      if (r) r.issues.push(issue);
      else rejected.push({ id, index, issues: [issue] });
    }
  }
}

/**
 * Translates a legacy file and merges its jobs. With `pollers.yaml` absent the legacy jobs still run (the
 * old file ran them), on default settings.
 */
function mergeLegacy(
  section: PollersSection | null,
  source: LegacyJobSource,
  src: SourceFile,
  ctx: SectionContext,
  issues: ConfigIssue[],
): PollersSection | null {
  const result = translateLegacyFile(source, src, ctx.agents, JOB_ID_MAX_LENGTH);
  issues.push(...result.issues);
  if (result.jobs.length === 0 && result.rejected.length === 0) return section;
  const current = section ?? defaultSection(src);
  const taken = new Set<string>([
    ...current.jobs.map((j) => j.spec.id),
    ...current.rejected.map((r) => r.id).filter((id): id is string => id !== undefined),
  ]);
  let index = Math.max(-1, ...current.jobs.map((j) => j.index), ...current.rejected.map((r) => r.index)) + 1;
  const jobs: LoadedJob[] = [...current.jobs];
  const rejected = [...current.rejected];
  for (const t of result.jobs)
    if (!taken.has(t.id))
      jobs.push({ index: index++, spec: t.job as PollerJob, issueAt: legacyIssueAt(source, src, t) });
  for (const r of result.rejected)
    if (!taken.has(r.id)) rejected.push({ id: r.id, index: index++, issues: r.issues });
  const report: LegacyReport = {
    title: source.title,
    file: src.display,
    deprecation: source.deprecation,
    jobs: result.jobs.map((t) => ({ ...t, overridden: taken.has(t.id) })),
    ids: result.jobs.filter((t) => !taken.has(t.id)).map((t) => t.id),
    rejected: result.rejected,
  };
  return { ...current, jobs, rejected, legacy: [...current.legacy, report] };
}

function defaultSection(src: SourceFile): PollersSection {
  const doc = { pollers: {} };
  validateAt(pollersFileSchema, doc, src, [], { scope: 'section', section: POLLERS_SECTION });
  const { jobs: _none, ...settings } = doc.pollers as PollersSettings & { jobs?: unknown };
  return { file: src.display, settings, jobs: [], rejected: [], legacy: [] };
}
