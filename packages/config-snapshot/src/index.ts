export * from './schemas.js';
export {
  CONFIG_ERROR_CODES,
  CONFIG_ISSUE_CODES,
  formatIssue,
  formatPath,
  type ConfigCodeInfo,
  type ConfigIssue,
  type ConfigIssueCode,
  type IssueScope,
  type IssueSeverity,
} from './issues.js';
export type { AgentSnapshot, ConfigSnapshot, PluginSnapshot } from './snapshot.js';
export type { SectionAgent, SectionContext, SectionReader, SectionResult } from './section.js';
export { issueAt, type IssueInput, type SourceFile } from './source.js';
export { validateAt, type OneOfFailure, type ValidateOptions } from './validate.js';
export { secretRedactor } from './snapshot.js';
export {
  DEFAULT_QUIET_MAX_WAIT_MS,
  DEFAULT_QUIET_MS,
  loadConfig,
  loadConfigWhenQuiet,
  type LoadOptions,
  type LoadResult,
  type QuietReadOptions,
  type RejectedAgent,
  type RestartChange,
} from './config.js';
export type { PluginSchemas, ReadOptions } from './load.js';
export {
  diff,
  changedPaths,
  restartRequiredChanges,
  RESTART_AGENT_FIELDS,
  RESTART_RUNTIME_FIELDS,
  type AgentDiff,
  type ChangeClass,
  type DiffInput,
  type FieldChange,
  type SnapshotDiff,
} from './diff.js';
export { createSnapshotStore, SnapshotVersionError, type SnapshotStore } from './store.js';
export { holdsReference, resolveRefs, type RefContext } from './refs.js';
export { MAX_FILE_BYTES, MAX_YAML_DEPTH } from './source.js';
export { compileSchema } from '@agent/json-schema';
export { coreReferenceEntries, renderReference, type ReferenceEntry } from './reference.js';
export { watchConfig, type ConfigWatcher, type ConfigWatcherOptions } from './watch.js';
export { loadClientConfig, type ClientConfig } from './client-config.js';
