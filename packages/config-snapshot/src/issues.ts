/** Problems found while loading configuration. Never thrown: returned as data with stable codes. */

export type IssueSeverity = 'error' | 'warning';
/** What an issue blocks: the whole load (`global`), one agent, one provider, one plugin file, the poller file or one job. */
export type IssueScope = 'global' | 'agent' | 'provider' | 'plugin' | 'pollers' | 'job';

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
}

export const CONFIG_ISSUE_CODES = {
  CONFIG_DIR_MISSING: 'The config directory does not exist or is not a directory.',
  CONFIG_FILE_UNREADABLE: 'A config file exists but could not be read, or is not a regular file.',
  CONFIG_FILE_TOO_LARGE: 'A config file is larger than 4 MiB.',
  CONFIG_FILE_CHANGING: 'A config file was being written while a reload read it; it was not used.',
  CONFIG_YAML_SYNTAX: 'A file is not valid YAML.',
  CONFIG_YAML_TOO_DEEP: 'Mappings and sequences of a file nest deeper than 64 levels.',
  CONFIG_UNKNOWN_KEY: 'A key that the schema does not know.',
  CONFIG_MISSING_KEY: 'A required key is missing.',
  CONFIG_INVALID_VALUE: 'A value has the wrong type or is out of range.',
  CONFIG_SECRET_PERMISSIONS: 'A `${file:}` secret is readable by group or others.',
  CONFIG_SECRET_OWNER: "A `${file:}` secret is owned by another user than the daemon's.",
  CONFIG_SECRET_MISSING: 'A `${file:}` secret does not exist or cannot be read.',
  CONFIG_SECRET_NOT_FILE: 'A `${file:}` secret is not a regular file (a FIFO, a directory, a device).',
  CONFIG_SECRET_EMPTY: 'A `${file:}` secret is empty.',
  CONFIG_ENV_UNSET: 'A `${VAR}` reference names an unset environment variable.',
  CONFIG_BAD_REFERENCE: 'A `${...}` reference has an unknown form.',
  CONFIG_BAD_AGENT_ID: 'An agent file name is not a valid agent id.',
  CONFIG_DUPLICATE_AGENT: 'Two files define the same agent id.',
  CONFIG_DUPLICATE_JOB: 'Two jobs share one id.',
  CONFIG_UNKNOWN_PROVIDER: 'An agent names a provider that llm.yaml does not define (or that is invalid).',
  CONFIG_UNKNOWN_PLUGIN: 'A binding names a channel plugin the daemon does not have.',
  CONFIG_UNKNOWN_INSTANCE:
    'A binding names a plugin instance that its plugin file does not define (or that is invalid).',
  CONFIG_UNKNOWN_ACCOUNT:
    'An agent credential names an account that its plugin file does not define (or that is invalid).',
  CONFIG_PLUGIN_NO_SCHEMA: 'A plugin file for which no schema is registered; its blocks are not validated.',
  CONFIG_NO_AGENTS: 'No agent files were found.',
} as const;

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
