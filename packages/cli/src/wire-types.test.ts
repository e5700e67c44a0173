// The CLI reads the admin API's wire types from `@agent/admin-api` as types only: a client command never
// loads the server (hono) for them.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const SERVER = /^(?:import|export)\b[^;]*?\bfrom\s+'(?:@agent\/admin-api|hono|@hono\/[^']+)'/gms;

describe('the admin API wire types in the CLI', () => {
  it('are imported with `import type` only', () => {
    const sources = readdirSync(import.meta.dirname).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts'),
    );
    const imports = sources.flatMap((f) =>
      [...readFileSync(join(import.meta.dirname, f), 'utf8').matchAll(SERVER)].map((m) => ({
        f,
        text: m[0],
      })),
    );
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((i) => !/^(?:import|export) type\s/.test(i.text))).toEqual([]);
  });
});
