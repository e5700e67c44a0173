/**
 * docs/writing-a-poller-kind.md, run as printed: its package.json and its `ts` blocks (each opens with
 * `// <path>`) become a scratch kind package inside this workspace. The package must type-check, and the
 * conformance suite of its test block runs here, against the kind of its definition block.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const guide = readFileSync(join(root, 'docs', 'writing-a-poller-kind.md'), 'utf8');

/** The bodies of the fenced blocks of `lang`, in order. */
function codeBlocks(markdown: string, lang: string): string[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1] === lang)
    .map((m) => m[2]!);
}

const files = codeBlocks(guide, 'ts').map((body) => ({
  path: /^\/\/ (\S+\.ts)\n/.exec(body)?.[1],
  body,
}));

// In the workspace, so `@agent/poller-core` resolves the way it does for a kind's own dev install; `.tmp` is
// ignored by git, vitest's file patterns and tsc -b.
const scratchRoot = join(here, '..', '.tmp');
mkdirSync(scratchRoot, { recursive: true });
const pkg = mkdtempSync(join(scratchRoot, 'guide-'));
afterAll(() => rmSync(pkg, { recursive: true, force: true }));

writeFileSync(join(pkg, 'package.json'), codeBlocks(guide, 'json')[0] ?? '{}');
writeFileSync(
  join(pkg, 'tsconfig.json'),
  JSON.stringify({
    extends: relative(pkg, join(root, 'tsconfig.base.json')),
    compilerOptions: { noEmit: true, composite: false, declaration: false, declarationMap: false },
    include: ['src'],
  }),
);
for (const f of files) {
  if (f.path === undefined) continue;
  mkdirSync(dirname(join(pkg, f.path)), { recursive: true });
  writeFileSync(join(pkg, f.path), f.body);
}

describe('docs/writing-a-poller-kind.md', () => {
  it('names the file of every ts block, and has a definition and a test', () => {
    expect(files.map((f) => f.path)).toEqual(['src/index.ts', 'src/index.test.ts']);
    expect(JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'))).toMatchObject({ type: 'module' });
  });

  it('type-checks as printed (strict, the workspace settings)', () => {
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const r = spawnSync(process.execPath, [tsc, '-p', join(pkg, 'tsconfig.json')], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

// The guide's own test block: it registers the conformance suite for the guide's kind in this file.
if (files.some((f) => f.path === 'src/index.test.ts')) {
  try {
    await import(pathToFileURL(join(pkg, 'src', 'index.test.ts')).href);
  } catch (err) {
    // A block that does not even load fails the file before afterAll is registered.
    rmSync(pkg, { recursive: true, force: true });
    throw err;
  }
}
