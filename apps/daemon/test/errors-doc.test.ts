// docs/errors.md is generated from the error catalogues of the code, and every code the source throws or
// reports is in one of them.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codesIn, NOT_CODES, unlistedCodes, workspaceSources } from './error-code-scan.js';

const root = join(import.meta.dirname, '..', '..', '..');

/** The codes docs/errors.md lists: the first cell of its table rows. */
function documented(): Set<string> {
  const doc = readFileSync(join(root, 'docs', 'errors.md'), 'utf8');
  return new Set([...doc.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!));
}

describe('docs/errors.md', () => {
  it('is up to date with the catalogues in the code (run `pnpm docs:errors`)', () => {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'gen-errors-doc.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
  });

  it('lists every error code the source throws or reports', () => {
    const files = workspaceSources(root);
    const used = new Set(files.flatMap((f) => codesIn(f.text)));
    expect(used.size).toBeGreaterThan(100);
    // A code missing here: add it, with its meaning and action, to its package's catalogue.
    expect(unlistedCodes(files, documented())).toEqual([]);
  });

  it('lists error codes only: no environment variables, no constants', () => {
    const listed = documented();
    for (const name of [
      'AGENT_ADMIN_URL',
      'NO_COLOR',
      'AGENT_TEST_MIN_LEASE_TTL_MS',
      'MAX_WEBHOOK_BODY_BYTES',
      'MAX_TOOL_RESULT_CHARS',
      'PRIVATE_CATEGORIES',
      'DEFAULT_TOKEN_URL',
      'MAX_PAGES_PER_SYNC',
      ...Object.keys(NOT_CODES),
    ])
      expect(listed.has(name), name).toBe(false);
  });
});

describe('the error code scan', () => {
  const source = [
    "throw new WidgetError('WIDGET_BROKEN', `widget ${id} is broken`);",
    "const issue = { code: 'WIDGET_MISSING_KEY', message: 'x' };",
    "class E extends Error { readonly code = 'WIDGET_CLASS_FIELD'; }",
    "super(message, 'WIDGET_SUPER_ARG');",
    "return failure('WIDGET_CALL_ARG', 'the function makes the error');",
    "export type WidgetCode = 'WIDGET_IN_UNION' | 'WIDGET_OTHER';",
    'const code = late ? "WIDGET_DOUBLE_QUOTED" : errorCode(err);',
    // Read only: codes of others that are compared against, and text that merely looks like a code.
    "if (err.code === 'UND_ERR_SOCKET' || code !== 'WIDGET_COMPARED') return;",
    "switch (code) { case 'WIDGET_CASE': break; }",
    "if (code.startsWith('ERR_BROTLI') || SEEN.has('WIDGET_MEMBER')) return;",
    "const msg = 'not a code'; const t = `WIDGET_IN_TEMPLATE`;",
  ].join('\n');

  it('finds codes in constructors, fields, calls, unions and ternaries, and skips reads', () => {
    expect(codesIn(source)).toEqual([
      'WIDGET_BROKEN',
      'WIDGET_CALL_ARG',
      'WIDGET_CLASS_FIELD',
      'WIDGET_DOUBLE_QUOTED',
      'WIDGET_IN_UNION',
      'WIDGET_MISSING_KEY',
      'WIDGET_OTHER',
      'WIDGET_SUPER_ARG',
    ]);
  });

  it('fails on a code that no catalogue lists, naming the file', () => {
    const files = [{ path: 'packages/widget/src/widget.ts', text: source }];
    const listed = new Set(codesIn(source).filter((c) => c !== 'WIDGET_CALL_ARG'));
    expect(unlistedCodes(files, listed)).toEqual([
      { code: 'WIDGET_CALL_ARG', file: 'packages/widget/src/widget.ts' },
    ]);
    // Named non-codes and Node's or undici's codes are not ours to list.
    const reads = "process.env['AGENT_ADMIN_URL']; const DOWN = new Set(['ECONNREFUSED', 'UND_ERR_SOCKET']);";
    expect(unlistedCodes([{ path: 'x.ts', text: reads }], new Set())).toEqual([]);
  });
});
