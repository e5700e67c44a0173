// The operator console in real Chromium against a real daemon: a job fails against a loopback feed and its
// breaker opens live; the operator pauses, runs and resets it (with the confirmation), resumes it with the
// keyboard, sees its delivery, errors, cursor and lease; previews a reload of an edited pollers.yaml (one job
// rejected) and applies it; reads the agents. Then the token flow, and the real listener's refusals.
// Screenshots are kept under apps/daemon/test-artifacts/console/.
import { mkdirSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page, type Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentFile, baseConfig, daemonScope } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'console');
const scope = daemonScope();
let feed: Server;
let feedUrl: string;
let failing = true;
/** The items the feed serves while it does not fail. */
let feedItems: { guid: string; title: string }[] = [];

let browser: Browser;
beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  // Debian's Chromium; Playwright gives it a fresh profile (--user-data-dir) of its own. The flags keep it
  // from calling home on this closed network.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  feed = createServer((_req, res) => {
    if (failing) {
      res.writeHead(503).end('down');
      return;
    }
    const items = feedItems.map((i) => `<item><guid>${i.guid}</guid><title>${i.title}</title></item>`);
    res.writeHead(200, { 'content-type': 'application/rss+xml' });
    res.end(
      `<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>${items.join('')}</channel></rss>`,
    );
  });
  await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
  feedUrl = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed.xml`;
});

afterAll(async () => {
  await browser?.close();
  feed?.closeAllConnections();
  await new Promise<void>((r) => (feed ? feed.close(() => r()) : r()));
});

const job = (id: string, every: number, agent = 'a'): string =>
  `    - id: ${id}\n      kind: rss\n      agent: ${agent}\n      schedule: { every_secs: ${every} }\n      config:\n        feed_url: ${feedUrl}\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`;
const pollers = (jobs: string[]): string =>
  `pollers:\n  default_jitter_ms: 0\n  breaker_threshold: 2\n  jobs:\n${jobs.join('')}`;
// No watcher: the edited pollers.yaml waits for the console's apply button.
const RUNTIME = 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  enabled: false\n';

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
/** What a reader sees of an element: its rendered text, spaces collapsed. */
const text = async (page: Page, selector: string): Promise<string> =>
  (await page.innerText(selector)).replace(/\s+/g, ' ').trim();
/** The focused element's action and job, as a keyboard user would find them. */
const focused = async (page: Page): Promise<{ tag: string; action: string; job: string }> =>
  page.evaluate(
    "(({ tagName, dataset }) => ({ tag: tagName, action: dataset?.action ?? '', job: dataset?.job ?? '' }))(document.activeElement)",
  );
/** Nothing on the page is wider than a 375 px phone screen (the tables scroll in their own boxes). */
const narrow = async (p: Page) =>
  expect(await p.evaluate('document.documentElement.scrollWidth'), p.url()).toBeLessThanOrEqual(375);
const TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/;
/** The jobs page without a filter (the address a live refresh asks before the filter is typed). */
const unfilteredJobs = (url: URL): boolean => url.pathname === '/' && url.search === '';

interface JobJson {
  paused: boolean;
  last_status: string | null;
  consecutive_errors: number;
  baselined?: boolean;
  seen_ids?: number;
  cursor?: { present: boolean; bytes: number };
  lease?: { holder: string | null; epoch: number; expires_at: string } | null;
  recent_deliveries?: { item: string; channel: string; to: string; at: string; ok: boolean }[];
}

describe('operator console in Chromium', () => {
  it('shows a breaker opening live; pause, run, reset, resume by keyboard; a delivery; preview and apply a reload', async () => {
    failing = true;
    feedItems = [];
    const { w, d } = await scope.boot({
      ...baseConfig({ runtime: RUNTIME }),
      'pollers.yaml': pollers([job('news', 1), job('digest', 3600)]),
    });
    const jobJson = async (id: string) =>
      (await (await fetch(`${d.adminUrl}/admin/pollers/${id}`)).json()) as JobJson;

    // Without JavaScript, on a phone, every read-only view reads: the jobs sorted and filtered by the query
    // string, the job, the agents and the reload preview; nothing is wider than the screen.
    const plain = await browser.newPage({ javaScriptEnabled: false, viewport: { width: 375, height: 740 } });
    await plain.goto(`${d.adminUrl}/?sort=id&dir=desc`);
    const rows = () => plain.$$eval('tbody tr', (trs) => trs.map((r) => r.getAttribute('data-job')));
    expect(await rows()).toEqual(['news', 'digest']);
    await narrow(plain);
    await plain.fill('#q', 'dig');
    await plain.click('form.filter button[type="submit"]');
    await plain.waitForURL(/q=dig/);
    expect(await rows()).toEqual(['digest']);
    await plain.goto(`${d.adminUrl}/jobs/news`);
    expect(await text(plain, 'h1')).toBe('Job news');
    expect(await text(plain, '#job dl')).toContain('Kind rss Agent a Schedule every 1s');
    expect(await text(plain, '#job-actions')).toContain('agent pollers run|pause|resume|reset news');
    await narrow(plain);
    await plain.goto(`${d.adminUrl}/agents`);
    expect(await text(plain, 'section.agent h2')).toBe('a v1');
    await narrow(plain);
    await plain.goto(`${d.adminUrl}/reload`);
    expect(await text(plain, '#preview p')).toMatch(
      /^Would run v1: add 0, replace 0, remove 0, keep 2, rejected 0\.$/,
    );
    expect(await text(plain, '#history tbody')).toMatch(/^v1 \S+ \S+ start 1 0$/);
    await narrow(plain);
    await plain.close();

    const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(e.message));

    await page.goto(`${d.adminUrl}/`);
    await page.waitForSelector('html[data-console="ready"]');
    // Live: the row changes under the same document (no navigation), until the breaker is open.
    await page.evaluate('window.marker = 1');
    await page.waitForSelector('tr[data-job="news"][data-breaker="open"]', { timeout: 15_000 });
    expect(await page.evaluate('window.marker')).toBe(1);
    expect(await page.textContent('tr[data-job="news"] td.num')).not.toBe('0');
    await shot(page, 'jobs-breaker-open');

    // Keyboard: the first Tab reaches the skip link; the filter narrows the table as one types.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content');
    // A live refresh slow to answer (held here) does not hold the filter back: typing asks anew at once.
    const held: Route[] = [];
    await page.route(unfilteredJobs, (route) => void held.push(route));
    await expect.poll(() => held.length, { timeout: 5000 }).toBeGreaterThan(0);
    await page.fill('#q', 'dige');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await Promise.all(held.map((r) => r.continue()));
    await page.unroute(unfilteredJobs);
    expect(page.url()).toContain('q=dige');
    await page.fill('#q', '');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(2);

    await page.click('a[href="/jobs/news"]');
    await page.waitForSelector('h1:text("Job news")');
    await page.click('button[data-action="pause"]');
    await page.waitForSelector('#status:text("pause news: done")');
    await page.waitForSelector('dd[data-field="paused"]:text("yes")');
    // The pressed button is gone (Pause became Resume): the focus went to its twin, not to the page's start.
    expect(await focused(page)).toEqual({ tag: 'BUTTON', action: 'resume', job: 'news' });
    await page.click('button[data-action="run"]');
    await page.waitForSelector('#status:text("run news: transient")');
    await expect.poll(() => focused(page)).toEqual({ tag: 'BUTTON', action: 'run', job: 'news' });

    // Reset asks first: dismissed, nothing happens; accepted, errors and breaker are cleared.
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.click('button[data-action="reset"]');
    await page.waitForSelector('#status:text("reset of news cancelled")');
    expect((await jobJson('news')).consecutive_errors).toBeGreaterThan(0);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('button[data-action="reset"]');
    await page.waitForSelector('#status:text("reset news: done")');
    await page.waitForSelector('dd[data-field="breaker"]:text("closed (0 consecutive errors)")');
    await shot(page, 'job-after-reset');

    // The feed works again. Keyboard only: back from Reset to Resume, Enter; the focus stays on the job's
    // actions (now Pause), and the facts below keep refreshing while it is there.
    failing = false;
    for (let i = 0; (await focused(page)).action !== 'resume'; i++) {
      expect(i, 'Shift+Tab reaches Resume').toBeLessThan(10);
      await page.keyboard.press('Shift+Tab');
    }
    await page.keyboard.press('Enter');
    await page.waitForSelector('#status:text("resume news: done")');
    await expect.poll(() => focused(page)).toEqual({ tag: 'BUTTON', action: 'pause', job: 'news' });
    await page.waitForSelector('dd[data-field="paused"]:text("no")');
    // The first good tick records the baseline (nothing delivered); one new item is delivered by the next.
    await expect.poll(async () => (await jobJson('news')).baselined, { timeout: 15_000 }).toBe(true);
    feedItems = [{ guid: 'item-1', title: 'Hello' }];
    await page.waitForSelector('#job tbody tr', { timeout: 15_000 });
    expect(await focused(page)).toEqual({ tag: 'BUTTON', action: 'pause', job: 'news' });
    const cells = await page.$$eval('#job tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
    );
    expect(cells).toHaveLength(1);
    const [at, item, channel, to, result] = cells[0]!;
    expect([item, channel, to, result]).toEqual(['item-1', 'log', 'op', 'delivered']);
    expect(at).toMatch(TIME);
    const detail = await jobJson('news');
    expect(detail.recent_deliveries).toEqual([
      { item: 'item-1', channel: 'log', to: 'op', at: expect.any(String), ok: true },
    ]);
    // The failures before the reset are the job's last errors (kept since the daemon started).
    const errors = await page.$$eval('#job ul.errors li', (lis) => lis.map((li) => li.textContent ?? ''));
    expect(errors.length).toBeGreaterThan(0);
    expect(
      errors.some((e) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ poller tick failed \(transient\): .*503/.test(e)),
    ).toBe(true);
    // Cursor and lease as the API tells them.
    await expect
      .poll(() => text(page, 'dd[data-field="cursor"]'))
      .toMatch(/^(\d+ bytes|none); [1-9]\d* seen id\(s\); baselined yes$/);
    const lease = (await jobJson('news')).lease;
    expect(lease?.epoch).toBeGreaterThan(0);
    expect(await text(page, 'dd[data-field="lease"]')).toMatch(
      /^(\S+ \(epoch \d+, expires \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\)|none \(last epoch \d+\))$/,
    );
    await shot(page, 'job-delivered');
    // Enter again: paused, and the focus is on Resume, ready for the next key.
    await page.keyboard.press('Enter');
    await page.waitForSelector('#status:text("pause news: done")');
    await expect.poll(() => focused(page)).toEqual({ tag: 'BUTTON', action: 'resume', job: 'news' });
    expect((await jobJson('news')).paused).toBe(true);

    // Reload: an edited pollers.yaml (one job more, one rejected) is previewed, nothing applied yet.
    w.write(
      'pollers.yaml',
      pollers([job('news', 1), job('digest', 3600), job('fresh', 3600), job('bad', 3600, 'nobody')]),
    );
    const previews = () => d.count(/msg="config reload previewed"/);
    const before = previews();
    const refreshes: string[] = [];
    // Live refreshes the daemon answered (a request sent may not have reached it yet).
    page.on('requestfinished', (r) => {
      if (r.headers()['x-console-refresh']) refreshes.push(new URL(r.url()).pathname);
    });
    await page.click('nav a[href="/reload"]');
    await page.waitForSelector('#preview li:text("Jobs added: + fresh")');
    expect(await page.textContent('#preview')).toContain('Would run v2');
    expect(await text(page, 'li[data-rejected-job="bad"]')).toMatch(
      /^job bad rejected: config\/pollers\.yaml:\d+:\d+ .*agent "nobody"/,
    );
    expect(
      ((await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as { jobs: unknown[] }).jobs,
    ).toHaveLength(2);
    // An open reload page refreshes its history and health, and previews once: when it was opened.
    await expect
      .poll(() => refreshes.filter((p) => p === '/reload').length, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(2);
    expect(previews() - before).toBe(1);
    await shot(page, 'reload-preview');
    await page.click('button[data-action="apply-reload"]');
    // The history row is the lasting trace of the apply.
    await page.waitForSelector('#history td:text("admin")', { timeout: 60_000 });
    await expect.poll(() => focused(page)).toEqual({ tag: 'BUTTON', action: 'apply-reload', job: '' });
    const list = (await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as {
      jobs: { id: string }[];
      rejected: { id: string }[];
    };
    expect(list.jobs.map((j) => j.id).sort()).toEqual(['digest', 'fresh', 'news']);
    expect(list.rejected.map((r) => r.id)).toEqual(['bad']);

    // The agents: the version each runs on, its channel, tools and outbound allowlist.
    await page.click('nav a[href="/agents"]');
    await page.waitForSelector('h1:text("Agents")');
    expect(await text(page, 'section.agent')).toBe(
      'a v2 model main/m1 Channel Allowed tools Outbound allowlist log/default * log: op',
    );
    await shot(page, 'agents');

    // A narrow screen: nothing wider than the viewport but the tables' own scroll boxes, on every page.
    await page.setViewportSize({ width: 375, height: 740 });
    for (const [href, ready] of [
      ['/', 'tr[data-job="fresh"]'],
      ['/jobs/news', 'h1:text("Job news")'],
      ['/agents', 'h1:text("Agents")'],
      ['/reload', '#preview'],
    ] as const) {
      await page.goto(`${d.adminUrl}${href}`);
      await page.waitForSelector(ready);
      await narrow(page);
      if (href === '/') await shot(page, 'jobs-narrow');
    }
    expect(problems).toEqual([]);
  }, 120_000);

  it('with admin.token_file: asks for the token once; pages and actions carry it; a reload asks no more', async () => {
    failing = true;
    const token = 'tok-5b1e9c47d2';
    const w = scope.workdir({
      ...baseConfig({ runtime: RUNTIME.replace('admin:\n', 'admin:\n  token_file: ./config/admin.token\n') }),
      'pollers.yaml': pollers([job('news', 3600)]),
    });
    w.write('admin.token', `${token}\n`, 0o600);
    const d = await scope.start(w);
    expect((await fetch(`${d.adminUrl}/admin/pollers`)).status).toBe(401);

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    const sent: { path: string; method: string; auth: string | undefined; navigation: boolean }[] = [];
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.origin === new URL(d.adminUrl).origin && !url.pathname.startsWith('/console/'))
        sent.push({
          path: url.pathname,
          method: r.method(),
          auth: r.headers().authorization,
          navigation: r.isNavigationRequest(),
        });
    });

    const first = await page.goto(`${d.adminUrl}/`);
    expect(first?.status()).toBe(401);
    await page.waitForSelector('html[data-console="ready"]');
    expect(await page.locator('tr[data-job]').count()).toBe(0);
    await page.fill('#token', token);
    await page.keyboard.press('Enter');
    await page.waitForSelector('tr[data-job="news"]');
    await page.click('a[href="/jobs/news"]');
    await page.waitForSelector('h1:text("Job news")');
    await page.click('button[data-action="pause"]');
    await page.waitForSelector('#status:text("pause news: done")');
    // At least one live refresh after the action.
    await expect
      .poll(() => sent.filter((s) => s.path === '/jobs/news').length, { timeout: 10_000 })
      .toBeGreaterThan(2);
    // The first request was the browser's own navigation (no token: the page that asks for it); every
    // request since the token was typed carries it.
    expect(sent[0]).toMatchObject({ path: '/', navigation: true, auth: undefined });
    const since = sent.slice(1);
    for (const s of since) expect(s.auth, `${s.method} ${s.path}`).toBe(`Bearer ${token}`);
    expect(since.some((s) => s.method === 'POST' && s.path === '/admin/pollers/news/pause')).toBe(true);

    // A reload of the tab: the browser's navigation has no token, the script sends the kept one at once.
    await page.reload();
    await page.waitForSelector('h1:text("Job news")');
    await page.waitForSelector('#token-form', { state: 'detached' });
    expect(await text(page, 'dd[data-field="paused"]')).toBe('yes');
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});

/** One request on a real socket, with exactly these headers (fetch would add or drop some). */
function raw(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let data = '';
      res.on('data', (c: Buffer) => (data += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the console on the real listener', () => {
  it('refuses cross-site mutations and sends its security headers', async () => {
    const { d } = await scope.boot({
      ...baseConfig({ runtime: RUNTIME }),
      'pollers.yaml': pollers([job('news', 3600)]),
    });
    const host = new URL(d.adminUrl).host;
    const foreign = await raw(`${d.adminUrl}/admin/pollers/news/pause`, 'POST', {
      host,
      origin: 'http://evil.example',
    });
    const crossSite = await raw(
      `${d.adminUrl}/admin/pollers/news/reset`,
      'POST',
      { host, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
      '{"confirm":true}',
    );
    for (const res of [foreign, crossSite]) {
      expect(res.status).toBe(403);
      expect((JSON.parse(res.body) as { error: { code: string } }).error.code).toBe('ADMIN_CROSS_SITE');
    }
    const after = (await (await fetch(`${d.adminUrl}/admin/pollers/news`)).json()) as JobJson;
    expect(after.paused).toBe(false);
    // The same request from the console's own origin passes.
    const own = await raw(`${d.adminUrl}/admin/pollers/news/pause`, 'POST', {
      host,
      origin: d.adminUrl,
      'sec-fetch-site': 'same-origin',
    });
    expect(own.status).toBe(200);

    const page = await raw(`${d.adminUrl}/jobs/news`, 'GET', { host });
    expect(page.status).toBe(200);
    expect(page.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy':
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    });
    const script = await raw(`${d.adminUrl}/console/app.js`, 'GET', { host });
    expect(script.status).toBe(200);
    expect(script.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('GET /admin/agents and /admin/reloads answer what the daemon runs', async () => {
    const { w, d } = await scope.boot({
      ...baseConfig({ agents: ['a', 'b'], runtime: RUNTIME }),
      'agents.d/b.yaml': agentFile('x', '    bogus: 1\n'),
      'pollers.yaml': 'pollers:\n  jobs: []\n',
    });
    const agents = await (await fetch(`${d.adminUrl}/admin/agents`)).json();
    expect(agents).toEqual({
      agents: [
        {
          id: 'a',
          version: 1,
          model: { provider: 'main', name: 'm1' },
          bindings: [
            { plugin: 'log', instance: 'default', allowed_tools: ['*'], outbound_allowlist: { log: ['op'] } },
          ],
        },
      ],
      invalid: [{ id: 'b', reason: expect.stringMatching(/^config\/agents\.d\/b\.yaml:11:5 .*"bogus"/) }],
    });
    const boot = (await (await fetch(`${d.adminUrl}/admin/reloads`)).json()) as {
      version: number;
      last_reload_successful: boolean;
      history: { version: number; at: string; triggers: string[]; applied: number; rejected: number }[];
    };
    expect(boot).toEqual({
      version: 1,
      last_reload_successful: false,
      history: [{ version: 1, at: expect.any(String), triggers: ['start'], applied: 1, rejected: 1 }],
    });

    // b is fixed and a reload through the admin API applies it: a new version, triggered by `admin`.
    w.write('agents.d/b.yaml', agentFile('fixed'));
    expect((await fetch(`${d.adminUrl}/admin/pollers/reload`, { method: 'POST' })).status).toBe(200);
    const reloads = (await (await fetch(`${d.adminUrl}/admin/reloads`)).json()) as typeof boot;
    expect(reloads.version).toBe(2);
    expect(reloads.last_reload_successful).toBe(true);
    expect(reloads.history.map((h) => [h.version, h.triggers, h.applied, h.rejected])).toEqual([
      [2, ['admin'], 2, 0],
      [1, ['start'], 1, 1],
    ]);
    expect(Date.parse(reloads.history[0]!.at)).toBeGreaterThanOrEqual(Date.parse(reloads.history[1]!.at));
    const after = (await (await fetch(`${d.adminUrl}/admin/agents`)).json()) as {
      agents: { id: string; version: number }[];
      invalid: unknown[];
    };
    expect(after.agents.map((a) => [a.id, a.version])).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
    expect(after.invalid).toEqual([]);
  });
});
