/**
 * @agent/poller-core — the stable plugin-author API: define a kind, classify its errors, render
 * templates. The runner lives in `./runtime`, the SQLite store in `./sqlite`, test helpers in `./testing`.
 */
export {
  baseConfigProperties,
  canonicalJson,
  GENERIC_CONFIG_FIELDS,
  DEFAULT_MAX_ITEMS_CONSIDERED,
  definePollerKind,
  deliverConfigSchema,
  isPollerKind,
  KIND_NAME_PATTERN,
  maxItemsConsidered,
  POLLER_API_VERSION,
  POLLER_KIND_BRAND,
  withBaseConfig,
  type AgentTool,
  type JsonValue,
  type KindConfigProblem,
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
export { compileSchema } from '@agent/json-schema';
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
  type StatusFailureOptions,
} from './http-errors.js';
