// Client commands load only what they run: the real bin under a preload that records every module it loads.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agent, assertBuilt, startTestDaemon, type TestDaemon } from './daemon.js';

// ESM modules through a loader hook (it runs on its own thread), CommonJS ones from the require cache at exit.
const HOOK = `import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function load(url, context, next) { appendFileSync(file, url + '\\n'); return next(url, context); }
`;
const PRELOAD = `import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
const file = process.env.LOADED_MODULES_FILE;
register(new URL('./hook.mjs', import.meta.url), { data: { file } });
process.on('exit', () => appendFileSync(file, Object.keys(createRequire(import.meta.url).cache).join('\\n') + '\\n'));
`;

let root: string;
let daemon: TestDaemon;
let runs = 0;
beforeAll(async () => {
  assertBuilt();
  root = mkdtempSync(join(tmpdir(), 'cli-loads-'));
  writeFileSync(join(root, 'hook.mjs'), HOOK);
  writeFileSync(join(root, 'preload.mjs'), PRELOAD);
  daemon = await startTestDaemon();
  // The operator's usual place: a directory whose config/runtime.yaml names the admin server.
  mkdirSync(join(root, 'config'));
  writeFileSync(join(root, 'config', 'runtime.yaml'), `admin:\n  listen: ${new URL(daemon.url).host}\n`);
});
afterAll(async () => {
  await daemon?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Runs the bin in `root` and returns its exit code and every module it loaded (URLs and paths, `/` separated). */
async function loadsOf(args: string[]): Promise<{ code: number; stderr: string; loaded: string[] }> {
  const file = join(root, `loaded-${++runs}.txt`);
  writeFileSync(file, '');
  const r = await agent(args, {
    cwd: root,
    env: { NODE_OPTIONS: `--import=${join(root, 'preload.mjs')}`, LOADED_MODULES_FILE: file },
  });
  const loaded = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.replaceAll('\\', '/'));
  return { code: r.code, stderr: r.stderr, loaded };
}

const has = (loaded: string[], part: string): boolean => loaded.some((l) => l.includes(part));

describe('the agent bin loads only what the command runs', { timeout: 60_000 }, () => {
  it('pollers list: the admin client and config reader, not the broker, the YAML document parser or the daemon', async () => {
    const { code, stderr, loaded } = await loadsOf(['pollers', 'list']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // The recorder sees the modules that ran (else the absences below would prove nothing).
    for (const part of ['/cli/dist/pollers.js', '/cli/dist/admin-client.js', '/js-yaml/'])
      expect(has(loaded, part), part).toBe(true);
    for (const part of [
      '/daemon/dist/daemon.js',
      '/daemon/dist/process-guards.js',
      '/broker/dist/',
      '/yaml/dist/',
      '/cli/dist/reload.js',
      '/cli/dist/cluster.js',
      '/cli/dist/check-config.js',
      '/log/dist/',
    ])
      expect(has(loaded, part), part).toBe(false);
  });

  it('--version and --help: no client at all', async () => {
    for (const args of [['--version'], ['--help'], ['pollers', 'list', '--help']]) {
      const { code, loaded } = await loadsOf(args);
      expect(code, args.join(' ')).toBe(0);
      expect(has(loaded, '/cli/dist/commands.js'), args.join(' ')).toBe(true);
      for (const part of ['/cli/dist/pollers.js', '/cli/dist/admin-client.js', '/config-snapshot/dist/'])
        expect(has(loaded, part), `${args.join(' ')}: ${part}`).toBe(false);
    }
  });
});
