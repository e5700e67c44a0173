/**
 * Sections: files of the config directory that another package owns (e.g. `pollers.yaml`, owned by the
 * poller runtime). This package reads them like every other file (size and depth limits, positions for
 * errors, `${file:}` and `${ENV}` references with their secrets redacted and watched) and keeps what the
 * owner's reader returns, opaque, in `snapshot.sections`. It knows no field of theirs.
 */
import type { ConfigIssue } from './issues.js';
import type { IssueInput, Segments, SourceFile } from './source.js';

/** An agent as a section sees it: its id and the provider accounts its `credentials` name. */
export interface SectionAgent {
  readonly id: string;
  readonly credentials: Readonly<Record<string, string>>;
}

export interface SectionContext {
  /** The owned files that exist and parsed, by config-relative path (`/` separators). */
  readonly files: ReadonlyMap<string, SourceFile>;
  /** Owned files that exist but could not be read; their issues are already reported. */
  readonly unreadable: ReadonlySet<string>;
  /** The agents that are valid in this read. */
  readonly agents: readonly SectionAgent[];
  /**
   * Resolves `${file:}` and `${ENV}` in `value` (found at `path` in `src`): secrets are redacted and their
   * files watched like every other file's; problems are pushed to `sink`, located.
   */
  resolveRefs(
    src: SourceFile,
    value: unknown,
    path: Segments,
    base: Omit<IssueInput, 'code' | 'message'>,
    sink: ConfigIssue[],
  ): unknown;
}

export interface SectionResult<T = unknown> {
  /** Kept in `snapshot.sections` under the reader's name; `null` when the section is absent. */
  value: T | null;
  issues: ConfigIssue[];
  /** A file of the section could not be used at all: a reload keeps the section's running value. */
  keepPrevious: boolean;
}

/** Registered by the package that owns the files; called once per read of the directory. */
export interface SectionReader<T = unknown> {
  readonly name: string;
  /** Config-relative paths the section owns; `plugins/<x>.yaml` here is no longer a plugin file. */
  readonly files: readonly string[];
  /** The size cap of these files, when the default of every config file (4 MiB) is too small for them. */
  readonly maxFileBytes?: number;
  read(ctx: SectionContext): SectionResult<T>;
}
