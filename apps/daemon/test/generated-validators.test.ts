// The config's JSON Schemas are validated by code generated ahead of time (scripts/gen-validators.mjs):
// every package's generated module must match its schemas and be registered by the module that declares
// them, or the daemon would quietly fall back to compiling them with ajv at every start.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');

describe('generated validators', () => {
  it('are up to date with the schemas and registered where the schemas are declared', () => {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'gen-validators.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
