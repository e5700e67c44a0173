// What a daemon loads at start, seen by a module hook in the daemon process: a daemon without pollers loads
// neither the poller runner nor any kind, one without a job no kind, and no daemon loads the CLI's commands
// beyond what its own command line needs. A reload that brings the first job loads the built-in kinds.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { baseConfig, daemonScope, type Workdir, NO_WATCHER } from './harness.js';

const scope = daemonScope();

/** Starts a daemon whose every loaded module URL is appended to `loaded.txt`; answers them once it is up. */
async function loadedAtStart(w: Workdir): Promise<string[]> {
  const log = join(w.root, 'loaded.txt');
  const hooks = join(w.root, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';\n` +
      `export async function load(url, context, next) {\n` +
      `  const loaded = await next(url, context);\n` +
      // A CommonJS file that an `import` brought in, scanned for its named exports: `import-cjs:<url>`.
      `  const cjs = loaded.format === 'commonjs' ? 'import-cjs:' + url + '\\n' : '';\n` +
      `  appendFileSync(${JSON.stringify(log)}, url + '\\n' + cjs);\n` +
      `  return loaded;\n}\n`,
  );
  const preload = join(w.root, 'preload.mjs');
  // CommonJS modules (prom-client's) never reach the ESM hook: each `require` is logged as `cjs:<request>`.
  writeFileSync(
    preload,
    `import Module, { register } from 'node:module';\nimport { appendFileSync } from 'node:fs';\n` +
      `register(${JSON.stringify(pathToFileURL(hooks).href)});\n` +
      `const load = Module._load;\n` +
      `Module._load = function (request, ...rest) {\n` +
      `  appendFileSync(${JSON.stringify(log)}, 'cjs:' + request + '\\n');\n` +
      `  return load.call(this, request, ...rest);\n};\n`,
  );
  writeFileSync(log, '');
  const d = await scope.start(w, { NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` });
  await d.waitFor(/msg="daemon started"/);
  return readFileSync(log, 'utf8').split('\n').filter(Boolean);
}

const ofPackage = (urls: string[], pkg: string, file?: string) =>
  urls.filter((u) => u.includes(`/packages/${pkg}/`) && (file === undefined || u.endsWith(`/${file}`)));

const KINDS = ['rss', 'mail', 'calendar', 'webhook'];
const POLLERS_ON = 'pollers:\n  enabled: true\n  jobs: []\n';
const pollersWith = (jobs: string) => `pollers:\n  enabled: true\n  jobs:\n${jobs}`;
const job = (id: string, kind: string) =>
  `    - id: ${id}\n      kind: ${kind}\n      agent: a\n      schedule: { cron: "0 0 3 * * *", tz: UTC }\n` +
  `      config:\n        feed_url: "http://127.0.0.1:9/feed"\n        allow_private_networks: true\n` +
  `        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`;
const RSS_JOB = job('news', 'rss');
const TYPO_JOB = job('typo', 'rsss');

describe('modules a daemon loads at start', () => {
  it('without pollers.yaml: no poller runner, no kind, no guarded HTTP client, no CLI commands', async () => {
    const urls = await loadedAtStart(scope.workdir(baseConfig()));
    // The hook saw the daemon's own modules: what it did not see was not loaded.
    expect(ofPackage(urls, 'config-snapshot').length).toBeGreaterThan(0);
    expect(ofPackage(urls, 'poller-runtime', 'config.js')).toHaveLength(1);
    expect(ofPackage(urls, 'poller-runtime', 'runner.js')).toEqual([]);
    for (const kind of KINDS) expect(ofPackage(urls, `poller-kind-${kind}`, 'kind.js'), kind).toEqual([]);
    expect(ofPackage(urls, 'guarded-http')).toEqual([]);
    expect(ofPackage(urls, 'cli', 'index.js')).toEqual([]);
    expect(ofPackage(urls, 'cli', 'subjects.js')).toHaveLength(1);
  });

  it('with pollers enabled and no job (the example config): the runner, but no kind', async () => {
    const urls = await loadedAtStart(scope.workdir({ ...baseConfig(), 'pollers.yaml': POLLERS_ON }));
    expect(ofPackage(urls, 'poller-runtime', 'runner.js')).toHaveLength(1);
    // prom-client's metric classes and process collectors, but not its index: no push gateway, no cluster
    // aggregator, no OpenTelemetry.
    const required = urls.filter((u) => u.startsWith('cjs:'));
    expect(required).toContain('cjs:prom-client/lib/registry');
    expect(required).toContain('cjs:prom-client/lib/metrics/gc');
    expect(required.filter((r) => /^cjs:prom-client$|pushgateway|cluster|@opentelemetry/.test(r))).toEqual(
      [],
    );
    // No CommonJS package through `import`: Node keeps the memory of scanning it for the process's life.
    expect(urls.filter((u) => u.startsWith('import-cjs:'))).toEqual([]);
    // The admin and metrics apps (hono, the routes, the console's pages) are built at their first request.
    expect(urls.filter((u) => u.includes('/hono@') || u.includes('/admin-api/dist/app.js'))).toEqual([]);
    for (const kind of KINDS) expect(ofPackage(urls, `poller-kind-${kind}`, 'kind.js'), kind).toEqual([]);
    expect(ofPackage(urls, 'cli', 'index.js')).toEqual([]);
  });

  it('with provider accounts and no job: the built-in kinds, whose tools the agents may use', async () => {
    const files = {
      ...baseConfig(),
      'pollers.yaml': POLLERS_ON,
      'plugins/mail.yaml':
        'accounts:\n  work:\n    client_id: c\n    client_secret: s\n    refresh_token: r\n',
    };
    const urls = await loadedAtStart(scope.workdir(files));
    expect(ofPackage(urls, 'poller-kind-mail', 'kind.js')).toHaveLength(1);
  });

  it('with a job: every built-in kind, so that any job is validated as before', async () => {
    const urls = await loadedAtStart(
      scope.workdir({ ...baseConfig(), 'pollers.yaml': pollersWith(RSS_JOB) }),
    );
    for (const kind of KINDS) expect(ofPackage(urls, `poller-kind-${kind}`, 'kind.js'), kind).toHaveLength(1);
  });
});

describe('built-in kinds loaded by a reload', () => {
  it('a daemon started without a job previews and applies a job of a built-in kind, and rejects an unknown kind naming the built-in ones', async () => {
    const w = scope.workdir({ ...baseConfig({ runtime: NO_WATCHER }), 'pollers.yaml': POLLERS_ON });
    const d = await scope.start(w);
    w.write('pollers.yaml', pollersWith(RSS_JOB + TYPO_JOB));
    const preview = await fetch(`${d.adminUrl}/admin/pollers/reload?dry_run=1`, { method: 'POST' });
    const planned = (await preview.json()) as { add: string[]; rejected: { id: string; errors: string[] }[] };
    expect(planned.add).toEqual(['news']);
    expect(planned.rejected).toEqual([
      {
        id: 'typo',
        errors: [
          expect.stringMatching(
            /kind "rsss" is not registered .*registered kinds: calendar, mail, rss, webhook_poll;/,
          ),
        ],
      },
    ]);
    const applied = await fetch(`${d.adminUrl}/admin/pollers/reload`, { method: 'POST' });
    expect(((await applied.json()) as { add: string[] }).add).toEqual(['news']);
    const jobs = (await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as { jobs: { id: string }[] };
    expect(jobs.jobs.map((j) => j.id)).toEqual(['news']);
  });
});
