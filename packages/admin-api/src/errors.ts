/** Errors of the admin API: one class with a stable `code`, and the HTTP status each code answers with. */

/** What one code means, the HTTP status it answers with (0: thrown at start), and what to do about it. */
export interface AdminErrorInfo {
  readonly status: number;
  readonly meaning: string;
  readonly action: string;
}

export const ADMIN_ERROR_CODES = {
  ADMIN_BAD_REQUEST: {
    status: 400,
    meaning: 'The body is not a JSON object, or a field has the wrong type.',
    action: 'Send no body, or a JSON object as documented for the endpoint.',
  },
  ADMIN_CONFIRM_REQUIRED: {
    status: 400,
    meaning: 'A reset was asked for without `{"confirm": true}`.',
    action: 'Send `{"confirm": true}`; `agent pollers reset <id> --yes` does.',
  },
  ADMIN_UNAUTHORIZED: {
    status: 401,
    meaning:
      'A token is configured (`admin.token_file`) and the request has no matching `Authorization: Bearer`.',
    action: 'Send `Authorization: Bearer <token>` with the content of the token file.',
  },
  ADMIN_HOST_NOT_LOOPBACK: {
    status: 403,
    meaning:
      'The `Host` header is missing, or is not `127.0.0.1`, `localhost` or `[::1]` (with an optional port).',
    action: 'Call the admin API by its loopback address; other names are refused against DNS rebinding.',
  },
  ADMIN_CROSS_SITE: {
    status: 403,
    meaning:
      'A browser marked the request as coming from another site (`Origin` not exactly `http://<Host>` on the server’s port, or `Sec-Fetch-Site: cross-site` / `same-site`).',
    action: 'Use the CLI or curl; web pages may not drive the admin API.',
  },
  ADMIN_CONTENT_TYPE: {
    status: 403,
    meaning:
      'A POST carries a body (or a `Content-Type`) that is not `application/json`; form posts are refused.',
    action: 'Send no body, or a JSON body with `Content-Type: application/json`.',
  },
  ADMIN_NOT_FOUND: {
    status: 404,
    meaning:
      'No such endpoint, or a `/admin/pollers*` endpoint while the poller subsystem is off (`pollers.yaml` absent or `enabled: false`).',
    action: 'Check the path against this page; turn the poller subsystem on to get its endpoints.',
  },
  ADMIN_UNKNOWN_JOB: {
    status: 404,
    meaning: 'No poller job with this id is loaded.',
    action: 'List the jobs with `GET /admin/pollers` (`agent pollers list`).',
  },
  ADMIN_METHOD_NOT_ALLOWED: {
    status: 405,
    meaning: 'The path exists but not with this method; the `Allow` header lists the methods it takes.',
    action: 'Use the method in `Allow`.',
  },
  ADMIN_CONFLICT: {
    status: 409,
    meaning: 'The poller service is stopping (daemon shutdown), so the job cannot be operated now.',
    action: 'Retry once the daemon is running again.',
  },
  ADMIN_BODY_TOO_LARGE: {
    status: 413,
    meaning: 'The request body is larger than 64 KiB.',
    action: 'Send a smaller body; no endpoint needs more than a few bytes.',
  },
  ADMIN_INTERNAL: {
    status: 500,
    meaning: 'The daemon failed while handling the request; details are in the daemon log only.',
    action: 'Read the daemon log line `admin request failed` for the reason.',
  },
  ADMIN_NOT_LOOPBACK: {
    status: 0,
    meaning: '`serveAdmin` was given a listen address that is not loopback.',
    action: 'Set `runtime.yaml` `admin.listen` to `127.0.0.1:<port>`, `localhost:<port>` or `[::1]:<port>`.',
  },
  ADMIN_BAD_LISTEN: {
    status: 0,
    meaning: 'A listen address is not `host:port` or `[v6]:port`.',
    action: 'Write the address as `127.0.0.1:9091`.',
  },
} as const satisfies Record<string, AdminErrorInfo>;

export type AdminErrorCode = keyof typeof ADMIN_ERROR_CODES;

/**
 * Codes of the metrics listener (`/metrics`, `/healthz`, `/readyz`), which answers with the same error shape
 * but is not the admin API.
 */
export const METRICS_ERROR_CODES = {
  HOST_NOT_ALLOWED: {
    status: 403,
    meaning:
      "The metrics listener got a request whose `Host` is missing, or names neither a loopback address nor the listener's own address (DNS rebinding defence).",
    action: "Scrape it at 127.0.0.1, localhost, or the listener's IP address.",
  },
  NOT_FOUND: {
    status: 404,
    meaning: 'The metrics listener serves only `GET /metrics`, `/healthz` and `/readyz`.',
    action: 'Use one of those paths; the admin API listens elsewhere (`admin.listen`).',
  },
} as const satisfies Record<string, AdminErrorInfo>;

export type MetricsErrorCode = keyof typeof METRICS_ERROR_CODES;

export class AdminError extends Error {
  readonly code: AdminErrorCode;
  readonly status: number;
  constructor(code: AdminErrorCode, message: string) {
    super(message);
    this.name = 'AdminError';
    this.code = code;
    this.status = ADMIN_ERROR_CODES[code].status;
  }
}

export function isAdminError(err: unknown): err is AdminError {
  return (
    err instanceof AdminError ||
    (err !== null &&
      typeof err === 'object' &&
      typeof (err as { code?: unknown }).code === 'string' &&
      (err as { code: string }).code in ADMIN_ERROR_CODES &&
      (err as { name?: unknown }).name === 'AdminError')
  );
}
