// The operator console in real Chromium against a real daemon: a job fails against a loopback feed and its
// breaker opens live; the operator pauses, runs and resets it (with the confirmation), previews a reload of an
// edited pollers.yaml and applies it. Screenshots are kept under apps/daemon/test-artifacts/console/.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseConfig, daemonScope } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'console');
const scope = daemonScope();
let feed: Server;
let feedUrl: string;
let failing = true;

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
    res.writeHead(200, { 'content-type': 'application/rss+xml' });
    res.end('<?xml version="1.0"?><rss version="2.0"><channel><title>F</title></channel></rss>');
  });
  await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
  feedUrl = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed.xml`;
});

afterAll(async () => {
  await browser?.close();
  feed?.closeAllConnections();
  await new Promise<void>((r) => (feed ? feed.close(() => r()) : r()));
});

const job = (id: string, every: number): string =>
  `    - id: ${id}\n      kind: rss\n      agent: a\n      schedule: { every_secs: ${every} }\n      config:\n        feed_url: ${feedUrl}\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`;
const pollers = (jobs: string[]): string =>
  `pollers:\n  default_jitter_ms: 0\n  breaker_threshold: 2\n  jobs:\n${jobs.join('')}`;
// No watcher: the edited pollers.yaml waits for the console's apply button.
const RUNTIME = 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  enabled: false\n';

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

describe('operator console in Chromium', () => {
  it('shows a breaker opening live; pause, run, reset with confirmation; preview and apply a reload', async () => {
    failing = true;
    const { w, d } = await scope.boot({
      ...baseConfig({ runtime: RUNTIME }),
      'pollers.yaml': pollers([job('news', 1), job('digest', 3600)]),
    });
    // Without JavaScript the read-only views read: sorted and filtered by the query string.
    const plain = await browser.newPage({ javaScriptEnabled: false });
    await plain.goto(`${d.adminUrl}/?sort=id&dir=desc`);
    const rows = () => plain.$$eval('tbody tr', (trs) => trs.map((r) => r.getAttribute('data-job')));
    expect(await rows()).toEqual(['news', 'digest']);
    await plain.fill('#q', 'dig');
    await plain.click('form.filter button[type="submit"]');
    await plain.waitForURL(/q=dig/);
    expect(await rows()).toEqual(['digest']);
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
    await page.fill('#q', 'dige');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    expect(page.url()).toContain('q=dige');
    await page.fill('#q', '');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(2);

    await page.click('a[href="/jobs/news"]');
    await page.waitForSelector('h1:text("Job news")');
    await page.click('button[data-action="pause"]');
    await page.waitForSelector('#status:text("pause news: done")');
    await page.waitForSelector('dd[data-field="paused"]:text("yes")');
    await page.click('button[data-action="run"]');
    await page.waitForSelector('#status:text("run news: transient")');

    // Reset asks first: dismissed, nothing happens; accepted, errors and breaker are cleared.
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.click('button[data-action="reset"]');
    await page.waitForSelector('#status:text("reset of news cancelled")');
    const before = (await (await fetch(`${d.adminUrl}/admin/pollers/news`)).json()) as {
      consecutive_errors: number;
    };
    expect(before.consecutive_errors).toBeGreaterThan(0);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('button[data-action="reset"]');
    await page.waitForSelector('#status:text("reset news: done")');
    await page.waitForSelector('dd[data-field="breaker"]:text("closed (0 consecutive errors)")');
    await shot(page, 'job-after-reset');

    // Reload: an edited pollers.yaml is previewed (nothing applied yet), then applied from the page.
    w.write('pollers.yaml', pollers([job('news', 1), job('digest', 3600), job('fresh', 3600)]));
    await page.click('nav a[href="/reload"]');
    await page.waitForSelector('#preview li:text("Jobs added: + fresh")');
    expect(await page.textContent('#preview')).toContain('Would run v2');
    expect(
      ((await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as { jobs: unknown[] }).jobs,
    ).toHaveLength(2);
    await shot(page, 'reload-preview');
    await page.click('button[data-action="apply-reload"]');
    // The history row is the lasting trace of the apply (the status line is transient: a live refresh of
    // the page may replace it before a slow machine looks).
    await page.waitForSelector('#history td:text("admin")', { timeout: 60_000 });
    expect(
      ((await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as { jobs: unknown[] }).jobs,
    ).toHaveLength(3);

    // A narrow screen: nothing wider than the viewport but the tables' own scroll boxes.
    await page.setViewportSize({ width: 375, height: 740 });
    await page.click('nav a[href="/"]');
    await page.waitForSelector('tr[data-job="fresh"]');
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await shot(page, 'jobs-narrow');
    expect(problems).toEqual([]);
  }, 60_000);
});
