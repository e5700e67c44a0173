/**
 * @agent/guarded-http — the HTTP client for untrusted URLs (feeds, JSON endpoints, provider APIs):
 * SSRF guard with address pinning, checked redirects, timeouts, decoded-size body cap,
 * Retry-After and conditional GET helpers.
 */
export {
  createGuardedHttp,
  MAX_REDIRECTS,
  type GuardedHttp,
  type GuardedHttpOptions,
  type GuardedHttpLogger,
  type GuardedRequestOptions,
  type GuardedResponse,
  type RedirectHop,
  type Resolver,
  type ResolvedAddress,
} from './client.js';
export {
  checkAddress,
  checkHostname,
  isBlockedAddress,
  PRIVATE_CATEGORIES,
  type AddressCategory,
  type AddressPolicy,
  type AddressVerdict,
} from './address-policy.js';
export { DEFAULT_MAX_BODY_BYTES } from './body.js';
export {
  checkJsonDepth,
  DEFAULT_JSON_MAX_DEPTH,
  parseJson,
  parseJsonAsync,
  type AsyncJsonOptions,
  type JsonLimits,
} from './json.js';
export {
  codeOf,
  GUARDED_HTTP_ERROR_CODES,
  GuardedHttpError,
  isGuardedHttpError,
  isRefusal,
  safeUrl,
  type GuardedHttpErrorCode,
  type GuardedHttpErrorDetails,
  type GuardedHttpErrorInfo,
  type TimeoutPhase,
} from './errors.js';
export { clampRetryAfter, parseRetryAfter, RETRY_AFTER_MAX_MS, RETRY_AFTER_MIN_MS } from './retry-after.js';
export { conditionalHeaders, validatorsFrom, type HeaderSource, type Validators } from './conditional.js';
export { urlProblems } from './url-problems.js';
