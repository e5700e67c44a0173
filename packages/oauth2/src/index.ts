/**
 * @agent/oauth2 — provider accounts (schema and parsing), an OAuth2 refresh-token client with
 * single-flight refresh, and the classification of token-endpoint and API errors.
 */
export {
  DEFAULT_TOKEN_URL,
  parseProviderAccount,
  providerAccountSchema,
  type ProviderAccount,
} from './account.js';
export {
  apiErrorReasons,
  classifyApiError,
  RATE_LIMIT_REASONS,
  type ApiErrorClassification,
} from './api-errors.js';
export {
  createAccountClient,
  createRefreshTokenClient,
  type OAuth2HttpClient,
  type OAuth2HttpResponse,
  type OAuth2RequestOptions,
  type RefreshTokenClient,
  type RefreshTokenClientOptions,
} from './client.js';
export {
  isOAuth2Error,
  OAUTH2_ERROR_CODES,
  OAuth2Error,
  type OAuth2ErrorClass,
  type OAuth2ErrorCode,
  type OAuth2ErrorInfo,
  type OAuth2ErrorOptions,
} from './errors.js';
