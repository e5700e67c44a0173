// What a daemon loads at start, seen by a module hook in the daemon process: a daemon without pollers loads
// neither the poller runner nor any kind, and no daemon loads the CLI's commands beyond what its own
// command line needs.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { baseConfig, daemonScope, type Workdir } from './harness.js';

const scope = daemonScope();

/** Starts a daemon whose every loaded module URL is appended to `loaded.txt`; answers them once it is up. */
async function loadedAtStart(w: Workdir): Promise<string[]> {
  const log = join(w.root, 'loaded.txt');
  const hooks = join(w.root, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';\n` +
      `export async function load(url, context, next) {\n` +
      `  appendFileSync(${JSON.stringify(log)}, url + '\\n');\n` +
      `  return next(url, context);\n}\n`,
  );
  const preload = join(w.root, 'preload.mjs');
  writeFileSync(
    preload,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  writeFileSync(log, '');
  const d = await scope.start(w, { NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` });
  await d.waitFor(/msg="daemon started"/);
  return readFileSync(log, 'utf8').split('\n').filter(Boolean);
}

const ofPackage = (urls: string[], pkg: string, file?: string) =>
  urls.filter((u) => u.includes(`/packages/${pkg}/`) && (file === undefined || u.endsWith(`/${file}`)));

const POLLERS_ON = 'pollers:\n  enabled: true\n  jobs: []\n';

describe('modules a daemon loads at start', () => {
  it('without pollers.yaml: no poller runner, no kind, no guarded HTTP client, no CLI commands', async () => {
    const urls = await loadedAtStart(scope.workdir(baseConfig()));
    // The hook saw the daemon's own modules: what it did not see was not loaded.
    expect(ofPackage(urls, 'config-snapshot').length).toBeGreaterThan(0);
    expect(ofPackage(urls, 'poller-runtime', 'config.js')).toHaveLength(1);
    expect(ofPackage(urls, 'poller-runtime', 'runner.js')).toEqual([]);
    for (const kind of ['rss', 'mail', 'calendar', 'webhook'])
      expect(ofPackage(urls, `poller-kind-${kind}`, 'kind.js'), kind).toEqual([]);
    expect(ofPackage(urls, 'guarded-http')).toEqual([]);
    expect(ofPackage(urls, 'cli', 'index.js')).toEqual([]);
    expect(ofPackage(urls, 'cli', 'subjects.js')).toHaveLength(1);
  });

  it('with pollers enabled: the runner and the built-in kinds', async () => {
    const urls = await loadedAtStart(scope.workdir({ ...baseConfig(), 'pollers.yaml': POLLERS_ON }));
    expect(ofPackage(urls, 'poller-runtime', 'runner.js')).toHaveLength(1);
    for (const kind of ['rss', 'mail', 'calendar', 'webhook'])
      expect(ofPackage(urls, `poller-kind-${kind}`, 'kind.js'), kind).toHaveLength(1);
    expect(ofPackage(urls, 'cli', 'index.js')).toEqual([]);
  });
});
