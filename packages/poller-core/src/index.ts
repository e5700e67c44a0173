/**
 * @agent/poller-core — the stable plugin-author API: define a kind, classify its errors, render
 * templates. The runner lives in `./runtime`, the SQLite store in `./sqlite`, test helpers in `./testing`.
 */
export {
  baseConfigProperties,
  canonicalJson,
  DEFAULT_MAX_ITEMS_CONSIDERED,
  definePollerKind,
  deliverConfigSchema,
  isPollerKind,
  KIND_NAME_PATTERN,
  maxItemsConsidered,
  POLLER_API_VERSION,
  POLLER_KIND_BRAND,
  hashSourceKey,
  sameSource,
  sourceKeyOf,
  withBaseConfig,
  type AgentTool,
  type JsonValue,
  type KindTool,
  type PollerHttp,
  type PollerKind,
  type PollerKindDefinition,
  type PollItem,
  type ResolvedAccount,
  type SharedContext,
  type TickContext,
  type TickResult,
  type ToolContext,
} from './kind.js';
export {
  classifyError,
  classifyHttpStatus,
  hasCode,
  isLeaseLost,
  isStateStoreError,
  LeaseLostError,
  StateStoreError,
  PermanentError,
  POLLER_ERROR_CODES,
  PollerError,
  retryAfterOf,
  safeReason,
  TransientError,
  type ErrorClass,
  type PollerErrorCode,
  type PollerErrorInfo,
  type PollerErrorOptions,
} from './errors.js';
export { compileSchema } from './schema.js';
export { pollerHttp } from './http.js';
export {
  renderTemplate,
  templatePlaceholders,
  TemplateSyntaxError,
  validateTemplate,
  type TemplateFields,
} from './template.js';
export {
  asPollerError,
  httpConfigProperties,
  httpRequestLimits,
  statusFailure,
  urlProblems,
  type StatusFailureOptions,
} from './http-errors.js';
// The guarded client's answers, so kinds need no dependency of their own: a URL safe for messages, and the
// `code` of any error.
export { codeOf, safeUrl } from '@agent/guarded-http';
// Bounded parsing for kinds that read large responses: JSON in slices with a depth cap, and time slices for
// their own loops.
export { DEFAULT_JSON_MAX_DEPTH, parseJsonAsync } from '@agent/guarded-http';
export { timeSlicer, type TimeSlicer } from '@agent/timers';
