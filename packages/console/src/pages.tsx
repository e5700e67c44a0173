/** @jsxImportSource hono/jsx */
/**
 * The console's pages, rendered on the server from the admin API's own JSON answers (asked in-process with
 * the caller's Host and token, so every rule and every redaction of the API applies). Loaded by the first
 * page request (see console.ts).
 */
import type {
  AdminAgentList,
  AdminInfo,
  AdminJobDetail,
  AdminJobList,
  AdminReloads,
  ReloadPlanJson,
} from '@agent/admin-api';
import { Hono, type Context } from 'hono';
import type { Child } from 'hono/jsx';
import { AgentsPage } from './agents-page.js';
import { readAsset } from './assets.js';
import { jobQueryOf } from './format.js';
import { PAGE_HEADERS } from './headers.js';
import { JobPage } from './job-page.js';
import { JobsPage } from './jobs-page.js';
import { ApiProblem, Layout, type Health } from './layout.js';
import type { ConsoleOptions } from './console.js';
import { ReloadPage } from './reload-page.js';

/** Sent by the client script's live refresh (see client/app.ts): the page's live parts are all it takes. */
const LIVE_REFRESH_HEADER = 'x-console-refresh';

type Answer<T> = { ok: true; body: T } | { ok: false; status: number; message: string };

/** The pages' routes (those `CONSOLE_ROUTES` names) and the page that asks for the admin token. */
export function consolePages(options: ConsoleOptions): { app: Hono; unauthorized(): Response } {
  const now = options.now ?? Date.now;
  const ask = async <T,>(c: Context, path: string, method = 'GET'): Promise<Answer<T>> => {
    const headers: Record<string, string> = { host: c.req.header('host') ?? '' };
    const auth = c.req.header('authorization');
    if (auth) headers.authorization = auth;
    const res = await options.api(path, { method, headers });
    const body = (await res.json()) as T & { error?: { message: string } };
    if (res.ok) return { ok: true, body };
    return {
      ok: false,
      status: res.status,
      message: body.error?.message ?? `the admin API answered ${res.status}`,
    };
  };
  const health = async (c: Context): Promise<Health> => {
    const [info, reloads] = await Promise.all([
      ask<AdminInfo>(c, '/admin/info'),
      ask<AdminReloads>(c, '/admin/reloads'),
    ]);
    return { info: info.ok ? info.body : null, reloads: reloads.ok ? reloads.body : null, now: now() };
  };
  const page = async (c: Context, title: string, path: string, body: Child, status = 200) =>
    c.body(
      `<!DOCTYPE html>${(
        <Layout title={title} path={path} health={await health(c)}>
          {body}
        </Layout>
      ).toString()}`,
      status as 200,
      PAGE_HEADERS,
    );

  const app = new Hono();
  app.get('/', async (c) => {
    const list = await ask<AdminJobList>(c, '/admin/pollers');
    const query = jobQueryOf({ q: c.req.query('q'), sort: c.req.query('sort'), dir: c.req.query('dir') });
    return page(
      c,
      'Jobs',
      '/',
      list.ok ? <JobsPage list={list.body} query={query} /> : <ApiProblem message={list.message} />,
    );
  });
  app.get('/jobs/:id', async (c) => {
    const id = c.req.param('id');
    const job = await ask<AdminJobDetail>(c, `/admin/pollers/${encodeURIComponent(id)}`);
    if (!job.ok) return page(c, `Job ${id}`, '/', <ApiProblem message={job.message} />, job.status);
    return page(c, `Job ${id}`, '/', <JobPage job={job.body} />);
  });
  app.get('/agents', async (c) => {
    const list = await ask<AdminAgentList>(c, '/admin/agents');
    return page(
      c,
      'Agents',
      '/agents',
      list.ok ? <AgentsPage list={list.body} /> : <ApiProblem message={list.message} />,
    );
  });
  app.get('/reload', async (c) => {
    // A preview changes nothing, so a page load may ask for one. The script's live refresh takes only the
    // history and the health strip: it asks without a preview, which reads and validates every file and
    // waits for the reload slot.
    const live = c.req.header(LIVE_REFRESH_HEADER) === '1';
    const [plan, reloads] = await Promise.all([
      live ? null : ask<ReloadPlanJson>(c, '/admin/pollers/reload?dry_run=1', 'POST'),
      ask<AdminReloads>(c, '/admin/reloads'),
    ]);
    return page(
      c,
      'Reload',
      '/reload',
      <ReloadPage
        plan={plan?.ok ? plan.body : null}
        problem={plan === null ? null : plan.ok ? null : plan.message}
        reloads={reloads.ok ? reloads.body : null}
      />,
    );
  });
  app.get('/console/:name', (c) => readAsset(c.req.param('name')) ?? c.notFound());

  return {
    app,
    unauthorized: () =>
      new Response(
        `<!DOCTYPE html>${(
          <Layout title="Admin token" path="" health={null}>
            <form id="token-form" class="token">
              <label for="token">
                This admin server needs its token (the content of runtime.yaml admin.token_file)
              </label>
              <input id="token" type="password" autocomplete="off" required />
              <button type="submit">Open the console</button>
            </form>
            <noscript>
              <p>
                With a token the console needs JavaScript: it keeps the token in this tab only and sends it
                with every request.
              </p>
            </noscript>
          </Layout>
        ).toString()}`,
        { status: 401, headers: { ...PAGE_HEADERS, 'www-authenticate': 'Bearer' } },
      ),
  };
}
