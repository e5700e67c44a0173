// docs/errors.md is generated from the package READMEs, and every code the source defines is in it.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory())
      return f === 'testing' || f === 'node_modules' || f === 'dist' ? [] : sources(p);
    const isSource =
      f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('testing.ts') && !f.startsWith('test-');
    return isSource ? [p] : [];
  });
}

describe('docs/errors.md', () => {
  it('is up to date with the READMEs (run `pnpm docs:errors`)', () => {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'gen-errors-doc.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
  });

  it('lists every error code defined in the source', () => {
    const doc = readFileSync(join(root, 'docs', 'errors.md'), 'utf8');
    const files = [
      ...readdirSync(join(root, 'packages')).map((p) => join(root, 'packages', p, 'src')),
      join(root, 'apps', 'daemon', 'src'),
    ];
    const codes = new Set<string>();
    for (const f of files.flatMap(sources)) {
      for (const m of readFileSync(f, 'utf8').matchAll(
        /'((?:CONFIG|POLLER|HTTP|BROKER|MODEL|CHANNEL|RUNTIME|ADMIN|DAEMON|FEED|WEBHOOK|OAUTH2|CLI)_[A-Z0-9_]+)'/g,
      ))
        codes.add(m[1]!);
    }
    expect(codes.size).toBeGreaterThan(100);
    const missing = [...codes].filter((c) => !doc.includes(`\`${c}\``)).sort();
    expect(missing).toEqual([]);
  });
});
