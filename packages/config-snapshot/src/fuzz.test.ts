// Property tests: whatever the files hold, the loader returns data (never throws, never hangs) and every
// error names a file and a path.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, type LoadResult } from './config.js';
import { tempConfig } from './testing.js';

const exampleDir = join(import.meta.dirname, '..', '..', '..', 'config');

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? listFiles(p) : [p];
  });
}
const example: Record<string, string> = Object.fromEntries(
  listFiles(exampleDir).map((p) => [relative(exampleDir, p), readFileSync(p, 'utf8')]),
);

const dir = tempConfig();
afterAll(() => dir.cleanup());

function loadFiles(files: Record<string, string>): { result: LoadResult; ms: number } {
  for (const f of listFiles(dir.config)) dir.remove(relative(dir.config, f));
  for (const [rel, content] of Object.entries(files)) dir.write(rel, content);
  const t0 = performance.now();
  const result = loadConfig(dir.config, { cwd: dir.root, env: { HOME: '/home/x' } });
  return { result, ms: performance.now() - t0 };
}

function checkInvariants({ result, ms }: { result: LoadResult; ms: number }): void {
  expect(ms).toBeLessThan(5000);
  expect(result.snapshot !== null || result.errors.length > 0).toBe(true);
  for (const e of [...result.errors, ...result.warnings]) {
    expect(e.file).toMatch(/\S/);
    expect(typeof e.path).toBe('string');
    expect(e.code).toMatch(/^CONFIG_[A-Z_]+$/);
    expect(typeof e.message).toBe('string');
  }
  for (const r of result.rejected) expect(r.reason).toMatch(/\S/);
}

const fileNames = [
  'llm.yaml',
  'agents.d/a.yaml',
  'agents.d/b.yaml',
  'pollers.yaml',
  'runtime.yaml',
  'broker.yaml',
  'memory.yaml',
  'plugins/log.yaml',
  'plugins/mail-poller.yaml',
];
const yamlValue = fc.jsonValue({ maxDepth: 4 }).map((v) => stringify(v));
const rawText = fc.string({ maxLength: 300, unit: 'binary' });

describe('loader fuzz', () => {
  it('never throws on random YAML documents and random bytes', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom(...fileNames), fc.oneof(yamlValue, rawText), { maxKeys: 6 }),
        (files) => {
          checkInvariants(loadFiles(files));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('the example config loads cleanly', () => {
    const { result } = loadFiles(example);
    expect(result.errors).toEqual([]);
    expect(result.snapshot?.agents.size).toBeGreaterThan(0);
  });

  const mutation = fc.oneof(
    fc.record({ op: fc.constant('delete' as const), at: fc.nat() }),
    fc.record({ op: fc.constant('duplicate' as const), at: fc.nat() }),
    fc.record({ op: fc.constant('indent' as const), at: fc.nat(), by: fc.integer({ min: -4, max: 4 }) }),
    fc.record({ op: fc.constant('insert' as const), at: fc.nat(), text: fc.string({ maxLength: 20 }) }),
    fc.record({
      op: fc.constant('value' as const),
      at: fc.nat(),
      text: fc.constantFrom(
        '',
        '~',
        '[]',
        '{}',
        '-1',
        'true',
        '"${UNSET_VAR}"',
        '${file:/nope}',
        '&a [*a, *a]',
        '*nope',
        '0x7f',
      ),
    }),
  );
  it('never throws on mutations of the example config', () => {
    const names = Object.keys(example);
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        (name, muts) => {
          const lines = example[name]!.split('\n');
          for (const m of muts) {
            const i = m.at % lines.length;
            if (m.op === 'delete') lines.splice(i, 1);
            else if (m.op === 'duplicate') lines.splice(i, 0, lines[i]!);
            else if (m.op === 'indent')
              lines[i] = m.by >= 0 ? ' '.repeat(m.by) + lines[i] : lines[i]!.slice(-m.by);
            else if (m.op === 'insert') lines.splice(i, 0, m.text);
            else lines[i] = lines[i]!.replace(/:\s.*$/, `: ${m.text}`);
          }
          checkInvariants(loadFiles({ ...example, [name]: lines.join('\n') }));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('does not blow up on an alias bomb', () => {
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 0; i < 9; i++)
      bomb.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9)
          .fill('*' + String.fromCharCode(97 + i))
          .join(',')}]`,
      );
    const r = loadFiles({ ...example, 'agents.d/assistant.yaml': bomb.join('\n') });
    checkInvariants(r);
    expect(r.result.rejected[0]!.issues[0]!.code).toBe('CONFIG_YAML_SYNTAX');
  });
});
