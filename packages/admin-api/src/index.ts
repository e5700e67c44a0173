export type { MetricsAppOptions } from './metrics.js';
export { createAdminApp, createMetricsApp, type HttpApp } from './lazy.js';
export { parseListen, serveAdmin, serveApp, type ServedApp, type ServeOptions } from './serve.js';
export type { AdminAppOptions, AdminPages, AdminPollers } from './app.js';
export type {
  AdminAgent,
  AdminAgentList,
  AdminErrorBody,
  AdminChannelOwner,
  AdminClusterStatus,
  AdminReloadRecord,
  AdminReloads,
  AdminInfo,
  AdminJobDetail,
  AdminJobList,
  AdminJobSummary,
  AdminRejectedJob,
  AdminRunResult,
  CredentialsReloadResult,
  ReloadPlanJson,
  RestartRequiredJson,
} from './wire.js';
export {
  ADMIN_ERROR_CODES,
  AdminError,
  isAdminError,
  METRICS_ERROR_CODES,
  type AdminErrorCode,
  type AdminErrorInfo,
  type MetricsErrorCode,
} from './errors.js';
export { ADMIN_ROUTES, routesForPath, type AdminRoute, type AdminRouteName } from './routes.js';
export { isLoopbackHost, MAX_BODY_BYTES } from './security.js';
export { REDACTED, redactJobConfig, redactUrl, SECRET_KEY_PATTERN } from './redact.js';
export { renderAdminApiDocs } from './docs.js';
