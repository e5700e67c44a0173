/**
 * What a stranger gets: every package `pnpm pack`ed, installed with plain npm into projects outside the
 * workspace. A kind author writes the kind of docs/writing-a-poller-kind.md as printed against the packed
 * `@agent/poller-core`, builds it with tsc and runs its conformance suite with vitest; an operator installs the
 * packed daemon and that kind, and the installed `agent` delivers the kind's items. Every `@agent/*` package
 * comes from the tarballs (`file:` specs and `overrides`), third-party packages from the npm registry or cache.
 */
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, workdir, type DaemonProcess, type Workdir } from './harness.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MINUTES = 60_000;

interface Manifest {
  name: string;
  version: string;
  license?: string;
  files?: string[];
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  overrides?: Record<string, string>;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

/**
 * The environment of npm, node and vitest run here: without what pnpm and vitest set for this run (npm_*
 * settings of the workspace, NODE_PATH, NODE_ENV, VITEST*), with npm's own settings the caller gave (cache,
 * registry, nodedir) kept, and this Node first on PATH.
 */
function toolEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    const kept = /^npm_config_(cache|registry|nodedir|userconfig)$/i.test(k);
    if (!kept && /^(npm_|pnpm_|vitest|node_path$|node_options$|node_env$|init_cwd$|test$)/i.test(k)) continue;
    env[k] = v;
  }
  return {
    ...env,
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    NO_COLOR: '1',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    ...extra,
  };
}

interface RunResult {
  code: number | null;
  out: string;
}

/** Runs `cmd` to its end; `out` is stdout and stderr interleaved. */
function run(cmd: string, args: string[], cwd: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd, env: toolEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.once('error', reject);
    p.once('close', (code) => resolve({ code, out }));
  });
}

async function mustRun(cmd: string, args: string[], cwd: string): Promise<string> {
  const r = await run(cmd, args, cwd);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}:\n${r.out}`);
  return r.out;
}

/** `npm install` as a stranger runs it, answered from npm's cache when it can. */
const npmInstall = (cwd: string, ...flags: string[]): Promise<string> =>
  mustRun('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...flags], cwd);

/** `^x.y.z` (the only form of range our manifests and the guide use) against a version. */
function caretAllows(range: string, version: string): boolean {
  const r = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range)?.slice(1).map(Number);
  const v = /^(\d+)\.(\d+)\.(\d+)$/.exec(version)?.slice(1).map(Number);
  if (r === undefined || v === undefined) return false;
  const [ra = 0, rb = 0, rc = 0] = r;
  const [va = 0, vb = 0, vc = 0] = v;
  if (va !== ra || (ra === 0 && vb !== rb)) return false;
  return vb > rb || (vb === rb && vc >= rc);
}

/** The bodies of the fenced blocks of `lang`, in order. */
const codeBlocks = (markdown: string, lang: string): string[] =>
  [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === lang).map((m) => m[2]!);

/** Blocks that open with `// <path>`: the files of the guide's kind package. */
const pathBlocks = (markdown: string, lang: string): { path: string; body: string }[] =>
  codeBlocks(markdown, lang).flatMap((body) => {
    const path = /^\/\/ (\S+)\n/.exec(body)?.[1];
    return path === undefined ? [] : [{ path, body }];
  });

/** Hooks that append every URL an ESM import resolves to a file, for counting packages. */
const COUNT_HOOKS = `import { appendFileSync } from 'node:fs';
let out;
export function initialize(data) { out = data.out; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(out, r.url + '\\n');
  return r;
}
`;
/** Imports the contract and prints the packages it loaded: ESM through the hooks, CommonJS from require's cache. */
const COUNT_MAIN = `import { createRequire, register } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const out = fileURLToPath(new URL('./resolved.txt', import.meta.url));
writeFileSync(out, '');
register('./count-hooks.mjs', import.meta.url, { data: { out } });
await import('@agent/poller-core');
const files = [
  ...readFileSync(out, 'utf8').split('\\n').filter((u) => u.startsWith('file:')).map((u) => fileURLToPath(u)),
  ...Object.keys(createRequire(import.meta.url).cache),
];
const packages = new Set();
for (const f of files) {
  const m = /node_modules[\\\\/]((?:@[^\\\\/]+[\\\\/])?[^\\\\/]+)[\\\\/](?!.*node_modules)/.exec(f);
  if (m) packages.add(m[1].replace('\\\\', '/'));
}
console.log(JSON.stringify([...packages].sort()));
`;

let tmp = '';
let packs = '';
/** Packed name -> tarball. */
const tarballs = new Map<string, string>();
const manifests = new Map<string, Manifest>();
let kindTarball: string | undefined;
let ops: Workdir | undefined;
let daemon: DaemonProcess | undefined;
let api: Server | undefined;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'apps', 'daemon', 'dist', 'bin.js')))
    throw new Error('build first: pnpm run build (pnpm test does)');
  tmp = mkdtempSync(join(tmpdir(), 'agent-install-'));
  packs = join(tmp, 'packs');
  mkdirSync(packs);
  // The daemon and everything it depends on: every publishable package, nothing else.
  await mustRun('pnpm', ['--filter', '@agent/daemon...', 'pack', '--pack-destination', packs], ROOT);
  for (const file of readdirSync(packs).filter((f) => f.endsWith('.tgz'))) {
    const tgz = join(packs, file);
    const m = JSON.parse(await mustRun('tar', ['-xzOf', tgz, 'package/package.json'], tmp)) as Manifest;
    tarballs.set(m.name, tgz);
    manifests.set(m.name, m);
  }
}, 2 * MINUTES);

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  if (api) await new Promise<void>((r) => api!.close(() => r()));
  ops?.cleanup();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Every packed `@agent/*` package to its tarball: npm then never asks the registry for one of ours. */
const overrides = (): Record<string, string> =>
  Object.fromEntries([...tarballs].map(([name, tgz]) => [name, `file:${tgz}`]));

describe('installing from the packed tarballs', () => {
  it('packs every publishable package with real ranges, files, exports, types, a license and a README', async () => {
    const publishable = [
      ...readdirSync(join(ROOT, 'packages')).map(
        (d) => readJson<Manifest>(join(ROOT, 'packages', d, 'package.json')).name,
      ),
      '@agent/daemon',
    ].sort();
    expect([...tarballs.keys()].sort()).toEqual(publishable);
    for (const [name, m] of manifests) {
      const text = JSON.stringify(m);
      expect(text, name).not.toContain('workspace:');
      expect(text, `${name} publishes a condition pointing at unpacked sources`).not.toContain(
        '@agent/source',
      );
      expect(m.license, name).toBe('MIT');
      expect(m.files, name).toContain('dist');
      const listing = (await mustRun('tar', ['-tzf', tarballs.get(name)!], tmp)).split('\n');
      expect(listing, name).toContain('package/README.md');
      // The build, its README and its manifest: no sources, tests or configs.
      expect(
        listing.filter((f) => f !== '' && !/^package\/(dist\/|README\.md$|package\.json$)/.test(f)),
        name,
      ).toEqual([]);
      for (const [sub, target] of Object.entries(m.exports ?? {})) {
        if (sub === './package.json') continue;
        const t = target as { types?: string; default?: string };
        expect(listing, `${name} ${sub}`).toContain(`package/${t.default!.slice(2)}`);
        expect(listing, `${name} ${sub}`).toContain(`package/${t.types!.slice(2)}`);
      }
      for (const deps of [m.dependencies, m.peerDependencies])
        for (const [dep, range] of Object.entries(deps ?? {}))
          if (dep.startsWith('@agent/'))
            expect(caretAllows(range, manifests.get(dep)!.version), `${name} -> ${dep}@${range}`).toBe(true);
    }
    expect(manifests.get('@agent/daemon')!.bin).toEqual({ agent: './dist/bin.js' });
  });

  it(
    'a kind written from the guide as printed installs, builds with tsc and passes the conformance suite',
    async () => {
      const guide = readFileSync(join(ROOT, 'docs', 'writing-a-poller-kind.md'), 'utf8');
      const kind = join(tmp, 'kind');
      mkdirSync(kind);
      const printed = JSON.parse(codeBlocks(guide, 'json')[0] ?? '{}') as Manifest;
      expect(printed.name).toBe('@acme/jira-poller-kind');
      // Ours come from the tarballs, the tools at this workspace's versions: both must be what the guide asks for.
      const tools = readJson<Manifest>(join(ROOT, 'package.json')).devDependencies ?? {};
      const local = (deps: Record<string, string> | undefined): Record<string, string> | undefined =>
        deps &&
        Object.fromEntries(
          Object.entries(deps).map(([dep, range]) => {
            const version = manifests.get(dep)?.version ?? tools[dep];
            expect(version, `${dep} is neither packed nor a tool of this workspace`).toBeDefined();
            expect(caretAllows(range, version!), `the guide's ${dep}@${range} for ${version}`).toBe(true);
            return [dep, tarballs.has(dep) ? `file:${tarballs.get(dep)}` : version!];
          }),
        );
      const pkg: Manifest = {
        ...printed,
        dependencies: local(printed.dependencies)!,
        devDependencies: local(printed.devDependencies)!,
        overrides: overrides(),
      };
      writeFileSync(join(kind, 'package.json'), JSON.stringify(pkg, null, 2));
      const files = [...pathBlocks(guide, 'jsonc'), ...pathBlocks(guide, 'ts')];
      expect(files.map((f) => f.path)).toEqual(['tsconfig.json', 'src/index.ts', 'src/index.test.ts']);
      for (const f of files) {
        mkdirSync(dirname(join(kind, f.path)), { recursive: true });
        writeFileSync(join(kind, f.path), f.body);
      }

      await npmInstall(kind);
      const core = readJson<Manifest>(join(kind, 'node_modules', '@agent', 'poller-core', 'package.json'));
      expect(core.exports).not.toHaveProperty(['.', '@agent/source']);

      const build = await run('npm', ['run', 'build'], kind);
      expect(build.code, build.out).toBe(0);
      expect(existsSync(join(kind, 'dist', 'index.js'))).toBe(true);
      expect(existsSync(join(kind, 'dist', 'index.d.ts'))).toBe(true);
      expect(existsSync(join(kind, 'dist', 'index.test.js'))).toBe(false);

      const report = join(tmp, 'conformance.json');
      const test = await run('npm', ['test', '--', '--reporter=json', `--outputFile=${report}`], kind);
      expect(test.code, test.out).toBe(0);
      const r = readJson<{ numTotalTests: number; numPassedTests: number }>(report);
      expect(r.numTotalTests).toBeGreaterThanOrEqual(8);
      expect(r.numPassedTests).toBe(r.numTotalTests);

      writeFileSync(join(kind, 'count-hooks.mjs'), COUNT_HOOKS);
      writeFileSync(join(kind, 'count.mjs'), COUNT_MAIN);
      const loaded = JSON.parse(await mustRun(process.execPath, ['count.mjs'], kind)) as string[];
      console.log(`import '@agent/poller-core' loads ${loaded.length} packages: ${loaded.join(', ')}`);
      expect(loaded).toContain('@agent/poller-core');
      // The contract and its JSON Schema validator (shared with the daemon, ajv loaded only when a schema
      // has no generated validator): nothing of the daemon's own.
      expect(loaded.filter((p) => p.startsWith('@agent/')).sort()).toEqual([
        '@agent/json-schema',
        '@agent/poller-core',
      ]);
      expect(loaded.length).toBeLessThan(8);

      const packed = await mustRun('npm', ['pack', '--pack-destination', tmp, '--silent'], kind);
      kindTarball = join(tmp, packed.trim().split('\n').at(-1)!);
      expect(existsSync(kindTarball)).toBe(true);
    },
    4 * MINUTES,
  );

  it(
    'the installed daemon loads that kind from kind_packages and delivers its items',
    async () => {
      expect(kindTarball, 'the kind package of the previous test').toBeDefined();
      let issues = [
        { key: 'OPS-2', fields: { summary: 'Second' } },
        { key: 'OPS-1', fields: { summary: 'First' } },
      ];
      const requests: string[] = [];
      api = createServer((req, res) => {
        requests.push(req.url ?? '');
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ issues }));
      });
      await new Promise<void>((r) => api!.listen(0, '127.0.0.1', r));
      const base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;

      ops = workdir({
        'llm.yaml':
          'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: key-1234\n',
        'plugins/log.yaml': 'instances:\n  default: {}\n',
        'runtime.yaml': 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n',
        'agents.d/a.yaml':
          'model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n',
        'pollers.yaml': `pollers:\n  default_jitter_ms: 0\n  kind_packages: ['@acme/jira-poller-kind']\n  jobs:\n    - id: jira\n      kind: acme_jira\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        base_url: ${base}\n        project: OPS\n        allow_private_networks: true\n        message_template: "{key}: {summary}"\n        deliver: { channel: log, to: op }\n`,
      });
      const root = ops.root;
      writeFileSync(
        join(root, 'package.json'),
        JSON.stringify({
          private: true,
          dependencies: {
            '@agent/daemon': `file:${tarballs.get('@agent/daemon')}`,
            '@acme/jira-poller-kind': `file:${kindTarball}`,
          },
          overrides: overrides(),
        }),
      );
      // No install scripts: the one dependency with one, better-sqlite3, gets the addon this workspace
      // compiled for this Node when the versions match, and is built otherwise.
      await npmInstall(root, '--ignore-scripts');
      const sqlite = join(root, 'node_modules', 'better-sqlite3');
      const ours = dirname(
        createRequire(join(ROOT, 'apps', 'daemon', 'package.json')).resolve('better-sqlite3/package.json'),
      );
      const addon = join('build', 'Release', 'better_sqlite3.node');
      if (
        readJson<Manifest>(join(sqlite, 'package.json')).version ===
          readJson<Manifest>(join(ours, 'package.json')).version &&
        existsSync(join(ours, addon))
      ) {
        mkdirSync(dirname(join(sqlite, addon)), { recursive: true });
        copyFileSync(join(ours, addon), join(sqlite, addon));
      } else {
        await mustRun('npm', ['rebuild', 'better-sqlite3'], root);
      }
      for (const name of tarballs.keys())
        expect(readJson<Manifest>(join(root, 'node_modules', name, 'package.json')).version).toBe(
          manifests.get(name)!.version,
        );

      daemon = await startDaemon(
        ops,
        { AGENT_TEST_MIN_LEASE_TTL_MS: '1500' },
        [],
        join(root, 'node_modules', '.bin', 'agent'),
      );
      expect(await daemon.waitFor(/msg="poller kind package loaded"/)).toMatch(
        /package=@acme\/jira-poller-kind .*kinds=.*acme_jira.*version=1\.0\.0/,
      );
      await daemon.waitFor(/msg="poller baseline recorded".*job_id=jira/, 15_000);
      expect(requests[0]).toMatch(/^\/rest\/api\/2\/search\?jql=project%3DOPS/);
      issues = [{ key: 'OPS-3', fields: { summary: 'Third' } }, ...issues];
      expect(await daemon.waitFor(/msg="channel delivery"/, 15_000)).toMatch(/to=op text="OPS-3: Third"/);
      expect(daemon.count(/msg="channel delivery"/)).toBe(1);
      expect(daemon.count(/level=error/)).toBe(0);
      expect(await daemon.stop('SIGTERM')).toBe(0);
    },
    4 * MINUTES,
  );
});
