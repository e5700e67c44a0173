/** Problems found while loading configuration. Never thrown: returned as data with stable codes. */

export type IssueSeverity = 'error' | 'warning';
/**
 * What an issue blocks: the whole load (`global`), one agent, one provider, one plugin file, a section owned
 * by another package (`section`, e.g. `pollers.yaml`) or one job of a section.
 */
export type IssueScope = 'global' | 'agent' | 'provider' | 'plugin' | 'section' | 'job';

export interface ConfigIssue {
  /** A `CONFIG_*` code of this package, or a code of the package that validated the part (e.g. `POLLER_*`). */
  code: ConfigIssueCode | (string & {});
  severity: IssueSeverity;
  scope: IssueScope;
  /** File as seen from the daemon's working directory (config dir joined with the relative name). */
  file: string;
  /** YAML path such as `inbound_bindings[0].plugin`; empty for the whole file. */
  path: string;
  line?: number;
  column?: number;
  message: string;
  /** What to do about it. */
  hint?: string;
  agentId?: string;
  jobId?: string;
  provider?: string;
  plugin?: string;
  /** The section's name (its reader's), for `section` and `job` issues. */
  section?: string;
}

/** What one code means and what the operator does about it. */
export interface ConfigCodeInfo {
  readonly meaning: string;
  readonly action: string;
}

export const CONFIG_ISSUE_CODES = {
  CONFIG_DIR_MISSING: {
    meaning: 'The config directory does not exist or is not a directory (fatal).',
    action: 'Pass `--config-dir` with the directory that holds `llm.yaml` and `agents.d/`.',
  },
  CONFIG_FILE_UNREADABLE: {
    meaning: 'A file exists but cannot be read, or is not a regular file (a FIFO, a directory).',
    action: 'Check permissions; replace it with a regular file.',
  },
  CONFIG_FILE_TOO_LARGE: {
    meaning:
      'A file is larger than its cap (4 MiB for most files; the message names the cap); refused before it is read.',
    action: 'Split it (one agent per file) or trim it.',
  },
  CONFIG_FILE_CHANGING: {
    meaning:
      'A file was being written while a reload read it (it changed during three reads, or an explicit reload found it changing for 2 s); it was not used, the running definition stays.',
    action:
      'Run `agent reload` again once the save is done; the watcher reloads by itself after the last save.',
  },
  CONFIG_YAML_SYNTAX: {
    meaning: 'A file is not valid YAML (duplicate keys and alias bombs included).',
    action: 'Fix the YAML at the line and column shown.',
  },
  CONFIG_YAML_TOO_DEEP: {
    meaning:
      'Mappings and sequences nest deeper than 64 levels (line and column of the first level too deep).',
    action: 'Flatten the structure.',
  },
  CONFIG_UNKNOWN_KEY: {
    meaning: 'A key the schema does not know; the hint lists the allowed keys.',
    action: 'Remove it or fix its spelling.',
  },
  CONFIG_MISSING_KEY: {
    meaning: 'A required key is missing (also `url` for `kind: nats`).',
    action: 'Add the key.',
  },
  CONFIG_INVALID_VALUE: {
    meaning: 'A value has the wrong type, is out of range or not allowed (schedules included).',
    action: 'Use a value of the type and range shown.',
  },
  CONFIG_SECRET_PERMISSIONS: {
    meaning: 'A `${file:}` secret is readable by group or others (checked on the link target).',
    action: '`chmod 600 <path>` as the hint says.',
  },
  CONFIG_SECRET_OWNER: {
    meaning: "A `${file:}` secret is owned by another user than the daemon's (checked on the link target).",
    action: '`chown <daemon user> <path>` as the hint says.',
  },
  CONFIG_SECRET_MISSING: {
    meaning: 'A `${file:}` secret does not exist or cannot be read.',
    action: "Create it with mode 600, or fix the path (relative to the daemon's working directory).",
  },
  CONFIG_SECRET_NOT_FILE: {
    meaning:
      'A `${file:}` secret is not a regular file (a FIFO, a directory, a socket, a device); the message names the type. Refused before it is opened.',
    action: 'Point `${file:}` at a regular file with mode 600.',
  },
  CONFIG_SECRET_EMPTY: {
    meaning: 'A `${file:}` secret is empty.',
    action: 'Write the secret into the file.',
  },
  CONFIG_ENV_UNSET: {
    meaning: 'A `${VAR}` names an unset environment variable; only the part that uses it is rejected.',
    action: 'Export the variable before starting the daemon.',
  },
  CONFIG_BAD_REFERENCE: {
    meaning: 'A `${...}` of an unknown form.',
    action: 'Use `${file:<path>}` or `${ENV_VAR}`; `$${` for a literal `${`.',
  },
  CONFIG_BAD_AGENT_ID: {
    meaning: 'An agent file name is not a valid id.',
    action: 'Rename the file to letters, digits, `_` and `-`.',
  },
  CONFIG_DUPLICATE_AGENT: {
    meaning: 'Two files define the same agent (`a.yaml` and `a.yml`).',
    action: 'Keep one.',
  },
  CONFIG_UNKNOWN_PROVIDER: {
    meaning: 'An agent names a provider that `llm.yaml` lacks or that is invalid.',
    action: 'Define it, or fix the errors reported for `llm.yaml`.',
  },
  CONFIG_UNKNOWN_PLUGIN: {
    meaning: 'A binding or allowlist names a channel plugin the daemon does not have.',
    action: 'Use one of the channels listed.',
  },
  CONFIG_UNKNOWN_INSTANCE: {
    meaning: 'A binding names a plugin instance that is missing or invalid.',
    action: 'Define it under `instances` in `plugins/<plugin>.yaml`.',
  },
  CONFIG_UNKNOWN_ACCOUNT: {
    meaning: 'An agent credential names an account that is missing or invalid.',
    action: 'Define it under `accounts` in `plugins/<kind>.yaml`.',
  },
  CONFIG_PLUGIN_NO_SCHEMA: {
    meaning: 'A warning: a plugin file nobody knows; its blocks are not validated.',
    action: 'Check the file name against the channels and kinds the daemon has.',
  },
  CONFIG_SECTION_FAILED: {
    meaning:
      'The reader of a section (a file another package owns, e.g. `pollers.yaml`) failed unexpectedly.',
    action: 'Report it with the log line; the section keeps its running value.',
  },
  CONFIG_NO_AGENTS: {
    meaning: 'A warning: no agent files were found.',
    action: 'Add `agents.d/<agent_id>.yaml`.',
  },
} as const satisfies Record<string, ConfigCodeInfo>;

/** Codes of errors this package throws (issues are returned, never thrown). */
export const CONFIG_ERROR_CODES = {
  CONFIG_SNAPSHOT_VERSION: {
    meaning:
      '`SnapshotStore.swap` got a snapshot that is not newer than the current one (a bug in the caller).',
    action: 'Report it with the log line; the running configuration stays in effect.',
  },
} as const satisfies Record<string, ConfigCodeInfo>;

export type ConfigIssueCode = keyof typeof CONFIG_ISSUE_CODES;

/** `config/agents.d/a.yaml:3:7 inbound_bindings[0]: unknown key "foo" [CONFIG_UNKNOWN_KEY] (fix: ...)` */
export function formatIssue(issue: ConfigIssue): string {
  const where = issue.line !== undefined ? `${issue.file}:${issue.line}:${issue.column ?? 1}` : issue.file;
  const path = issue.path ? ` ${issue.path}:` : ':';
  const hint = issue.hint ? ` (fix: ${issue.hint})` : '';
  return `${where}${path} ${issue.message} [${issue.code}]${hint}`;
}

/** Formats a YAML path from its segments: `inbound_bindings[0].plugin`. */
export function formatPath(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    // A key too long to be a valid name is cut: the path must not flood a log line.
    else if (s.length > 64) out += `[${JSON.stringify(`${s.slice(0, 40)}…`)}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(s)) out += out ? `.${s}` : s;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}
