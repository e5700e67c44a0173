/**
 * The loopback admin app: operator endpoints of the poller subsystem and credential rotation. Every answer is
 * JSON; every refusal happens before any handler runs, so a refused request never changes state.
 */
import type { Logger } from '@agent/log';
import { Hono, type Context } from 'hono';
import { ADMIN_ERROR_CODES, AdminError, isAdminError, type AdminErrorCode } from './errors.js';
import { redactJobConfig, redactStrings } from './redact.js';
import { ADMIN_ROUTES, routesForPath, type AdminRouteName } from './routes.js';
import {
  checkHost,
  checkMutationBody,
  checkSameOrigin,
  checkToken,
  localEndOf,
  readJsonObject,
} from './security.js';
import type {
  AdminClusterStatus,
  AdminAgentList,
  AdminInfo,
  AdminReloads,
  AdminJobDetail,
  AdminJobList,
  AdminJobSummary,
  AdminRejectedJob,
  AdminRunResult,
  CredentialsReloadResult,
  ReloadPlanJson,
} from './wire.js';

/** Pages mounted on the admin server; see `AdminAppOptions.pages`. */
export interface AdminPages {
  /** The GET routes of the pages (hono patterns, e.g. `/jobs/:id`): only these reach `fetch`. */
  routes: readonly string[];
  /** Answers a page request; `env` is what the HTTP adapter binds (the socket). */
  fetch(request: Request, env: unknown): Response | Promise<Response>;
  isPublic(path: string): boolean;
  /** The page that asks a browser for the token (async: the pages may load on first use). */
  unauthorized(): Response | Promise<Response>;
}

/** The part of the poller service the admin routes use (structurally the daemon's `Runner`). */
export interface AdminPollers {
  list(): Promise<readonly AdminJobSummary[]>;
  show(id: string): Promise<AdminJobDetail>;
  run(id: string): Promise<AdminRunResult>;
  pause(id: string): Promise<AdminJobSummary>;
  resume(id: string): Promise<AdminJobSummary>;
  reset(id: string): Promise<AdminJobSummary>;
  /** Jobs of pollers.yaml the running configuration rejects, with located reasons. */
  rejectedJobs?(): readonly AdminRejectedJob[];
}

export interface AdminAppOptions {
  /** `null` while the poller subsystem is off; a function is asked on every request (the subsystem may start on reload). */
  pollers: AdminPollers | null | (() => AdminPollers | null);
  /**
   * Re-reads the config and applies the poller diff; with `dryRun`, plans the same way and applies nothing.
   * Throw an `AdminError` to choose the answer (e.g. `ADMIN_BAD_REQUEST`).
   */
  reloadPollers(options: { dryRun: boolean }): Promise<ReloadPlanJson>;
  reloadCredentials(): Promise<CredentialsReloadResult>;
  /** `GET /admin/info`; without it the endpoint answers 404. */
  info?: () => AdminInfo;
  /** `GET /admin/cluster` (cluster mode); without it the endpoint answers 404. */
  cluster?: () => Promise<AdminClusterStatus>;
  /** `GET /admin/agents`; without it the endpoint answers 404. */
  agents?: () => AdminAgentList;
  /** `GET /admin/reloads`; without it the endpoint answers 404. */
  reloads?: () => AdminReloads;
  /**
   * Pages served beside the API (the operator console), under the same Host, site and token rules. Paths
   * for which `isPublic` holds (static assets that hold no data) need no token; a page request without the
   * token is answered by `unauthorized` (a page that asks for it) instead of the JSON error.
   */
  pages?: AdminPages;
  /** When set (non-empty), every request needs `Authorization: Bearer <token>`. A function is asked per request. */
  token?: string | null | (() => string | null);
  /** Hides secret values in every string of every answer (the snapshot's `redact`). */
  redact?: (text: string) => string;
  logger: Logger;
}

const SERVICE_CODES: Record<string, AdminErrorCode> = {
  POLLER_UNKNOWN_JOB: 'ADMIN_UNKNOWN_JOB',
  POLLER_STOPPED: 'ADMIN_CONFLICT',
  POLLER_CONFIRM_REQUIRED: 'ADMIN_CONFIRM_REQUIRED',
};

const JSON_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

/** The admin app itself; `createAdminApp` (lazy.ts) builds it at its first request. */
export function buildAdminApp(options: AdminAppOptions): Hono {
  const logger = options.logger.child({ component: 'admin' });
  const redact = options.redact ?? ((t: string) => t);
  const pollersNow = (): AdminPollers | null =>
    typeof options.pollers === 'function' ? options.pollers() : options.pollers;
  const tokenNow = (): string | null =>
    (typeof options.token === 'function' ? options.token() : options.token) || null;

  const send = (c: Context, status: number, body: unknown, headers: Record<string, string> = {}) =>
    c.newResponse(JSON.stringify(redactStrings(body, redact)), status as 200, {
      'content-type': 'application/json; charset=utf-8',
      ...JSON_HEADERS,
      ...headers,
    });

  const fail = (c: Context, err: AdminError, headers: Record<string, string> = {}) =>
    send(c, err.status, { error: { code: err.code, message: err.message } }, headers);

  const app = new Hono();

  // Refusals first: host, site, token, body type. Nothing below runs for a refused request.
  app.use('*', async (c, next) => {
    const headers = c.req.raw.headers;
    try {
      const local = localEndOf(c.env);
      const host = checkHost(headers, local);
      checkSameOrigin(headers, host, local);
      const token = tokenNow();
      if (token && !options.pages?.isPublic(c.req.path)) checkToken(headers, token);
      if (c.req.method === 'POST') checkMutationBody(headers);
    } catch (err) {
      if (!isAdminError(err)) throw err;
      logger.warn('admin request refused', { method: c.req.method, path: c.req.path, code: err.code });
      if (err.code === 'ADMIN_UNAUTHORIZED' && options.pages && isPageRequest(c))
        return options.pages.unauthorized();
      return fail(c, err, err.code === 'ADMIN_UNAUTHORIZED' ? { 'www-authenticate': 'Bearer' } : {});
    }
    await next();
  });

  const pollersOrOff = (): AdminPollers => {
    const p = pollersNow();
    if (!p)
      throw new AdminError(
        'ADMIN_NOT_FOUND',
        'the poller subsystem is off (pollers.yaml is absent or has enabled: false)',
      );
    return p;
  };

  const handlers: Record<AdminRouteName, (c: Context) => Promise<unknown>> = {
    listPollers: async () => {
      const p = pollersOrOff();
      return { jobs: await p.list(), rejected: p.rejectedJobs?.() ?? [] } satisfies AdminJobList;
    },
    showPoller: async (c) => {
      const detail = await pollersOrOff().show(c.req.param('id')!);
      return { ...detail, config: redactJobConfig(detail.config) };
    },
    runPoller: async (c) => pollersOrOff().run(c.req.param('id')!),
    pausePoller: async (c) => pollersOrOff().pause(c.req.param('id')!),
    resumePoller: async (c) => pollersOrOff().resume(c.req.param('id')!),
    resetPoller: async (c) => {
      const p = pollersOrOff();
      const body = await readJsonObject(c.req.raw);
      if (body.confirm !== true)
        throw new AdminError(
          'ADMIN_CONFIRM_REQUIRED',
          `reset of "${c.req.param('id')}" is destructive: send {"confirm": true}`,
        );
      return p.reset(c.req.param('id')!);
    },
    reloadPollers: async (c) => {
      pollersOrOff();
      return options.reloadPollers({ dryRun: dryRunOf(c.req.query('dry_run')) });
    },
    reloadCredentials: async () => options.reloadCredentials(),
    info: async () => {
      if (!options.info) throw new AdminError('ADMIN_NOT_FOUND', 'no daemon information here');
      return options.info();
    },
    cluster: async () => {
      if (!options.cluster)
        throw new AdminError('ADMIN_NOT_FOUND', 'this daemon runs in single-host mode (no cluster.yaml)');
      return options.cluster();
    },
    agents: async () => {
      if (!options.agents) throw new AdminError('ADMIN_NOT_FOUND', 'no agent information here');
      return options.agents();
    },
    reloads: async () => {
      if (!options.reloads) throw new AdminError('ADMIN_NOT_FOUND', 'no reload history here');
      return options.reloads();
    },
  };

  for (const route of ADMIN_ROUTES) {
    app.on(route.method, route.path, async (c) => {
      try {
        if (route.mutation && route.name !== 'resetPoller') await readJsonObject(c.req.raw);
        const body = await handlers[route.name](c);
        if (route.mutation)
          logger.info('admin request', {
            route: route.name,
            ...(c.req.param('id') ? { job_id: c.req.param('id') } : {}),
            status: 200,
          });
        return send(c, 200, body);
      } catch (err) {
        const known = toAdminError(err, c.req.param('id'));
        if (known) return fail(c, known);
        logger.error('admin request failed', {
          route: route.name,
          reason: redact(err instanceof Error ? err.message : String(err)),
        });
        return fail(c, new AdminError('ADMIN_INTERNAL', 'internal error; see the daemon log'));
      }
    });
  }

  const pages = options.pages;
  if (pages) for (const route of pages.routes) app.get(route, (c) => pages.fetch(c.req.raw, c.env));

  app.notFound((c) => {
    const routes = routesForPath(c.req.path);
    const methods = [...new Set(routes.map((r) => r.method))];
    const off = routes.length > 0 && routes.every((r) => r.pollers) && pollersNow() === null;
    if (methods.length > 0 && !off) {
      const allow = methods.includes('GET') ? [...methods, 'HEAD'] : methods;
      return fail(
        c,
        new AdminError(
          'ADMIN_METHOD_NOT_ALLOWED',
          `${c.req.method} is not allowed here; use ${methods.join(' or ')}`,
        ),
        { allow: allow.join(', ') },
      );
    }
    return fail(c, new AdminError('ADMIN_NOT_FOUND', `no admin endpoint ${c.req.path}`));
  });

  app.onError((err, c) => {
    logger.error('admin request failed', { reason: redact(err.message) });
    return fail(c, new AdminError('ADMIN_INTERNAL', 'internal error; see the daemon log'));
  });

  return app;
}

/** A browser's page load (not the JSON API): what the pages answer, a 401 included. */
function isPageRequest(c: Context): boolean {
  return (c.req.method === 'GET' || c.req.method === 'HEAD') && !c.req.path.startsWith('/admin/');
}

/** `?dry_run=1` (or `true`) previews; absent, `0` or `false` reloads; anything else is a mistake. */
function dryRunOf(value: string | undefined): boolean {
  if (value === undefined || value === '0' || value === 'false') return false;
  if (value === '' || value === '1' || value === 'true') return true;
  throw new AdminError('ADMIN_BAD_REQUEST', `dry_run must be 1 or 0 (true or false), not "${value}"`);
}

/** Errors with a meaning for the caller: our own, and the poller service's codes. */
function toAdminError(err: unknown, id: string | undefined): AdminError | null {
  if (isAdminError(err)) return err;
  const code = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  const mapped = typeof code === 'string' ? SERVICE_CODES[code] : undefined;
  if (!mapped) return null;
  if (mapped === 'ADMIN_UNKNOWN_JOB')
    return new AdminError(mapped, `no poller job "${id ?? ''}"; list the jobs with agent pollers list`);
  return new AdminError(
    mapped,
    mapped === 'ADMIN_CONFLICT' ? ADMIN_ERROR_CODES[mapped].meaning : (err as Error).message,
  );
}
