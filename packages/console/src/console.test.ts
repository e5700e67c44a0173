// The console mounted on the real admin app: its headers, its token page, and every cross-site refusal of
// the JSON API applying to it and to the mutations its buttons send.
import {
  createAdminApp,
  type AdminAgentList,
  type AdminInfo,
  type AdminJobSummary,
  type AdminPollers,
  type AdminReloads,
  type ReloadPlanJson,
} from '@agent/admin-api';
import { createMemoryLogger } from '@agent/log';
import { describe, expect, it } from 'vitest';
import { createConsole } from './console.js';
import { consolePages } from './pages.js';

const SUMMARY: AdminJobSummary = {
  id: 'news',
  kind: 'rss',
  agent: 'a',
  schedule: 'every 60s',
  paused: false,
  breaker: 'open',
  consecutive_errors: 5,
  last_status: 'transient',
  last_run_at: '2026-03-01T08:00:00.000Z',
  next_run_at: '2026-03-01T08:01:00.000Z',
};

const JOBS: AdminJobSummary[] = [
  SUMMARY,
  { ...SUMMARY, id: 'calm', breaker: 'closed', consecutive_errors: 0 },
];

const INFO: AdminInfo = {
  version: '1.4.2',
  pid: 4242,
  started_at: '2026-03-01T08:00:00.000Z',
  config_dir: '/srv/agent/config',
  data_dir: '/srv/agent/data',
  broker: { kind: 'local' },
  metrics_url: 'http://127.0.0.1:9090/metrics',
};
/** The console's clock: 2 h 5 min after the daemon started. */
const NOW = Date.parse('2026-03-01T10:05:00.000Z');

const AGENTS: AdminAgentList = {
  agents: [
    {
      id: 'helper',
      version: 3,
      model: { provider: 'main', name: 'gpt-x' },
      bindings: [
        {
          plugin: 'chat_a',
          instance: 'team',
          allowed_tools: ['pollers_list', 'pollers_run'],
          outbound_allowlist: { chat_a: ['ops', 'dev'], log: ['op'] },
        },
        { plugin: 'log', instance: '*', allowed_tools: [], outbound_allowlist: {} },
      ],
    },
    {
      id: 'sales',
      version: 1,
      model: { provider: 'other', name: 'm2' },
      bindings: [{ plugin: 'log', instance: 'default', allowed_tools: ['*'], outbound_allowlist: {} }],
    },
  ],
  invalid: [
    { id: 'broken', reason: 'config/agents.d/broken.yaml:3:1 model: missing key [CONFIG_MISSING_KEY]' },
  ],
};

const RELOADS: AdminReloads = {
  version: 3,
  last_reload_successful: false,
  history: [
    { version: 3, at: '2026-03-01T09:30:00.000Z', triggers: ['admin', 'watcher'], applied: 1, rejected: 1 },
    { version: 1, at: '2026-03-01T08:00:00.000Z', triggers: ['start'], applied: 2, rejected: 0 },
  ],
};

const EMPTY_PLAN: ReloadPlanJson = { add: [], replace: [], remove: [], keep: [], rejected: [] };

/** Only the text of some HTML, spaces collapsed: what a reader sees. */
const textOf = (html: string): string =>
  html
    .replace(/<\/?(?:strong|span|a|time)\b[^>]*>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/\s+/g, ' ')
    .trim();

function setup(
  token: string | null = null,
  jobs: AdminJobSummary[] = JOBS,
  plan: ReloadPlanJson = EMPTY_PLAN,
) {
  const calls: string[] = [];
  const pollers: AdminPollers = {
    list: async () => jobs,
    show: async (id) => ({
      ...SUMMARY,
      id,
      config: { feed_url: 'https://x.example/f', api_token: 'sekrit-123' },
    }),
    run: async (id) => (calls.push(`run ${id}`), { status: 'ok', items_seen: 0, items_dispatched: 0 }),
    pause: async (id) => (calls.push(`pause ${id}`), SUMMARY),
    resume: async (id) => (calls.push(`resume ${id}`), SUMMARY),
    reset: async (id) => (calls.push(`reset ${id}`), SUMMARY),
  };
  let app: ReturnType<typeof createAdminApp> | undefined;
  const pages = createConsole({ api: async (path, init) => app!.request(path, init), now: () => NOW });
  app = createAdminApp({
    pollers,
    token,
    reloadPollers: async ({ dryRun }) => (
      calls.push(dryRun ? 'preview' : 'reload'),
      { ...plan, dry_run: dryRun }
    ),
    info: () => INFO,
    agents: () => AGENTS,
    reloads: () => RELOADS,
    reloadCredentials: async () => ({ channels: [], pollers: true }),
    logger: createMemoryLogger(),
    pages,
  });
  const req = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
    app!.request(path, { ...init, headers: { host: '127.0.0.1:9091', ...init.headers } });
  return { req, calls };
}

const api = async () => new Response('{}');
const routes = (app: { routes: { method: string; path: string }[] }) =>
  app.routes.map((r) => `${r.method} ${r.path}`).sort();

describe('console pages', () => {
  it('are reached through the same routes before they load as after', () => {
    // createConsole mounts stand-ins that load the pages at the first request; a page route missing from
    // them would be a 404 (or the admin API's answer) instead of the page.
    const standIns = createConsole({ api }).routes.map((path) => `GET ${path}`);
    expect(standIns.sort()).toEqual(routes(consolePages({ api }).app));
    expect(routes(consolePages({ api }).app).length).toBeGreaterThanOrEqual(5);
  });

  it('set a strict CSP, forbid framing, send no referrer and are never cached', async () => {
    const { req } = setup();
    for (const path of ['/', '/jobs/news', '/agents', '/reload']) {
      const res = await req(path);
      expect(res.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy'), path).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      );
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      expect(res.headers.get('referrer-policy'), path).toBe('no-referrer');
      expect(res.headers.get('cache-control'), path).toBe('no-store');
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      const html = await res.text();
      // No inline code: the one script is a file of this server.
      expect(html.match(/<script[^>]*>/g), path).toEqual(['<script type="module" src="/console/app.js">']);
      expect(html, path).not.toMatch(/ on[a-z]+=| style=/);
    }
  });

  it('render the API answers: jobs with their breaker, a job with its secrets redacted', async () => {
    const { req } = setup();
    const jobs = await (await req('/')).text();
    expect(jobs).toContain('<tr data-job="news" data-breaker="open" data-paused="no">');
    expect(jobs).toContain('2 of 2 job(s)');
    expect(await (await req('/?q=calm')).text()).toContain('1 of 2 job(s)');
    const job = await (await req('/jobs/news')).text();
    expect(job).toContain('[redacted]');
    expect(job).not.toContain('sekrit-123');
  });

  it('mark a job whose pollers.yaml entry is rejected as stale, with the reason as its title', async () => {
    const { req } = setup(null, [
      { ...SUMMARY, definition: 'stale', definition_error: 'config/pollers.yaml:4:7 kind: bad' },
      { ...SUMMARY, id: 'calm', definition: 'current' },
    ]);
    const html = await (await req('/')).text();
    expect(html).toContain(
      '<a href="/jobs/news">news</a><span class="tag bad" title="config/pollers.yaml:4:7 kind: bad">stale</span>',
    );
    expect(html.match(/>stale</g)).toHaveLength(1);
  });

  it('show the health strip on every page: daemon version, uptime, config version, last reload, metrics', async () => {
    const { req } = setup();
    for (const path of ['/', '/jobs/news', '/agents', '/reload']) {
      const html = await (await req(path)).text();
      const strip = /<section class="health"[^>]*>([\s\S]*?)<\/section>/.exec(html)?.[1] ?? '';
      const parts = [...strip.matchAll(/<(span|a)\b[^>]*>([\s\S]*?)<\/\1>/g)].map((m) => textOf(m[2]!));
      expect(parts, path).toEqual([
        'daemon 1.4.2',
        'up 2h 5m',
        'config v3',
        'last reload: rejected something',
        'metrics',
      ]);
      expect(strip, path).toContain('<span class="bad">last reload: rejected something</span>');
      expect(strip, path).toContain('<a href="http://127.0.0.1:9090/metrics">metrics</a>');
    }
  });

  it('list every agent with its version, model, channels, allowed tools and outbound allowlists', async () => {
    const { req } = setup();
    const res = await req('/agents');
    expect(res.status).toBe(200);
    const html = await res.text();
    const section = (id: string) =>
      textOf(
        new RegExp(`<section class="agent" aria-labelledby="agent-${id}">([\\s\\S]*?)</section>`).exec(
          html,
        )?.[1] ?? '',
      );
    expect(section('helper')).toBe(
      'helper v3 model main/gpt-x Channel Allowed tools Outbound allowlist ' +
        'chat_a/team pollers_list, pollers_run chat_a: ops, dev; log: op ' +
        'log/* none none',
    );
    expect(section('sales')).toBe(
      'sales v1 model other/m2 Channel Allowed tools Outbound allowlist log/default * none',
    );
    expect(textOf(html)).toContain(
      'Agent files that run no definition broken: config/agents.d/broken.yaml:3:1 model: missing key [CONFIG_MISSING_KEY]',
    );
  });

  it('render the reload preview: jobs, rejected jobs and agents with file and line, restart required', async () => {
    const plan: ReloadPlanJson = {
      add: ['fresh'],
      replace: ['news'],
      remove: ['old'],
      keep: ['calm'],
      rejected: [
        {
          id: 'bad',
          errors: [
            'config/pollers.yaml:21:14 pollers.jobs[3].agent: agent "nobody" does not exist [POLLER_UNKNOWN_AGENT]',
          ],
        },
      ],
      errors: ['config/llm.yaml:4:14 providers.main.api_key: mode 0644 [CONFIG_SECRET_PERMISSIONS]'],
      dry_run: true,
      version: 4,
      agents: {
        applied: ['helper'],
        rejected: [
          { agent_id: 'sales', reason: 'config/agents.d/sales.yaml:7:5 allowed_toolz: unknown key' },
        ],
        restart_required: [
          {
            agent_id: 'helper',
            field: 'workspace',
            reason: 'the agent keeps its running workspace until the daemon restarts',
            file: 'config/agents.d/helper.yaml',
            line: 11,
          },
          { field: 'broker.yaml url' },
        ],
      },
    };
    const { req, calls } = setup(null, JOBS, plan);
    const html = await (await req('/reload')).text();
    expect(calls).toEqual(['preview']);
    const items = [...html.matchAll(/<li(?: [^>]*)?>([\s\S]*?)<\/li>/g)].map((m) => textOf(m[1]!));
    expect(items).toEqual([
      'Jobs added: + fresh',
      'Jobs replaced: ~ news',
      'Jobs removed: - old',
      'Agents applied: helper',
      'job bad rejected: config/pollers.yaml:21:14 pollers.jobs[3].agent: agent "nobody" does not exist [POLLER_UNKNOWN_AGENT]',
      'agent sales rejected: config/agents.d/sales.yaml:7:5 allowed_toolz: unknown key',
      'config/llm.yaml:4:14 providers.main.api_key: mode 0644 [CONFIG_SECRET_PERMISSIONS]',
      'restart required: helper workspace (config/agents.d/helper.yaml:11): the agent keeps its running workspace until the daemon restarts',
      'restart required: broker.yaml url',
    ]);
    expect(textOf(html)).toContain('Would run v4: add 1, replace 1, remove 1, keep 1, rejected 2.');
    expect(html).toContain('<li class="bad" data-rejected-job="bad">');
    expect(html).toContain('<li class="bad" data-rejected-agent="sales">');
    expect(html).toContain('<li class="warn" data-restart="helper">');
    // The applied versions, newest first, with what triggered each.
    const rows = [...html.matchAll(/<tr><td>([\s\S]*?)<\/tr>/g)].map((m) => textOf(m[1]!));
    expect(rows).toEqual(['v3 2026-03-01 09:30:00Z admin, watcher 1 1', 'v1 2026-03-01 08:00:00Z start 2 0']);
  });

  it('preview at a page load, and never at the live refresh of the reload page', async () => {
    const { req, calls } = setup();
    const live = await req('/reload', { headers: { 'x-console-refresh': '1' } });
    expect(live.status).toBe(200);
    const html = await live.text();
    expect(html).toContain('id="history"');
    expect(html).toContain('id="health"');
    expect(calls).toEqual([]);
    await req('/reload');
    expect(calls).toEqual(['preview']);
  });

  it('name the daemon holding each job of a cluster, and have no Holder column on a single host', async () => {
    expect(await (await setup().req('/')).text()).not.toContain('Holder');
    const { req } = setup(null, [
      { ...SUMMARY, holder: 'host-a#4242.9f3c1a2b', lease_expires_at: '2026-03-01T08:01:30.000Z' },
      { ...SUMMARY, id: 'calm', holder: null, lease_expires_at: null },
    ]);
    const html = await (await req('/')).text();
    expect(html).toContain('<th scope="col">Holder</th>');
    expect(html).toContain('<td data-field="holder">host-a</td>');
    expect(html).toContain('<td data-field="holder">-</td>');
    expect(await (await req('/?q=host-a')).text()).toContain('1 of 2 job(s)');
  });

  it('serve their script and style sheet, and nothing else under /console/', async () => {
    const { req } = setup();
    const js = await req('/console/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await req('/console/style.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    for (const bad of ['/console/app.d.ts', '/console/..%2fpackage.json', '/console/nope.js'])
      expect((await req(bad)).status, bad).toBe(404);
  });
});

describe('console security: refused exactly like the JSON API', () => {
  const cases: [string, string, string, Record<string, string>, number, string][] = [
    [
      'a foreign Origin',
      'POST',
      '/admin/pollers/news/pause',
      { origin: 'http://evil.example' },
      403,
      'ADMIN_CROSS_SITE',
    ],
    ['Origin null', 'POST', '/admin/pollers/news/run', { origin: 'null' }, 403, 'ADMIN_CROSS_SITE'],
    [
      'Sec-Fetch-Site: cross-site',
      'POST',
      '/admin/pollers/news/reset',
      { 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
      403,
      'ADMIN_CROSS_SITE',
    ],
    [
      'a form post',
      'POST',
      '/admin/pollers/news/pause',
      { 'content-type': 'application/x-www-form-urlencoded' },
      403,
      'ADMIN_CONTENT_TYPE',
    ],
    [
      'a text/plain post',
      'POST',
      '/admin/pollers/reload',
      { 'content-type': 'text/plain' },
      403,
      'ADMIN_CONTENT_TYPE',
    ],
    [
      'a bad Host (DNS rebinding)',
      'POST',
      '/admin/pollers/news/pause',
      { host: 'evil.example:9091' },
      403,
      'ADMIN_HOST_NOT_LOOPBACK',
    ],
    ['a page with a bad Host', 'GET', '/', { host: 'evil.example' }, 403, 'ADMIN_HOST_NOT_LOOPBACK'],
    [
      'a page loaded cross-site',
      'GET',
      '/jobs/news',
      { 'sec-fetch-site': 'cross-site' },
      403,
      'ADMIN_CROSS_SITE',
    ],
    [
      'a page framed by another origin',
      'GET',
      '/reload',
      { origin: 'http://evil.example' },
      403,
      'ADMIN_CROSS_SITE',
    ],
  ];
  it.each(cases)('%s is refused and changes nothing', async (_name, method, path, headers, status, code) => {
    const { req, calls } = setup();
    const body = method === 'POST' && headers['content-type'] ? '{"confirm":true}' : undefined;
    const res = await req(path, { method, headers, ...(body ? { body } : {}) });
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
    expect(calls).toEqual([]);
  });

  it('the buttons’ same-origin requests pass', async () => {
    const { req, calls } = setup();
    const own = { origin: 'http://127.0.0.1:9091', 'sec-fetch-site': 'same-origin' };
    expect((await req('/admin/pollers/news/pause', { method: 'POST', headers: own })).status).toBe(200);
    const reset = await req('/admin/pollers/news/reset', {
      method: 'POST',
      headers: { ...own, 'content-type': 'application/json' },
      body: '{"confirm":true}',
    });
    expect(reset.status).toBe(200);
    expect(calls).toEqual(['pause news', 'reset news']);
  });

  it('with a token: pages ask for it, the script and style need none, the API and pages need it', async () => {
    const { req } = setup('tok-3f9a1c2b');
    const page = await req('/');
    expect(page.status).toBe(401);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).toContain('id="token-form"');
    expect(html).not.toContain('data-job');
    expect((await req('/console/app.js')).status).toBe(200);
    expect((await req('/admin/pollers')).status).toBe(401);
    const authed = await req('/', { headers: { authorization: 'Bearer tok-3f9a1c2b' } });
    expect(authed.status).toBe(200);
    expect(await authed.text()).toContain('data-job="news"');
  });
});
