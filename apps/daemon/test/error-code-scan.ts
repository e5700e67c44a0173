/**
 * The static scan behind `errors-doc.test.ts`: which error codes the source throws or reports. A code is any
 * string literal shaped like one (`UPPER_SNAKE` with at least one `_`), unless it is only compared against
 * (`=== 'UND_ERR_SOCKET'`, `case 'X_Y':`, `.startsWith('ERR_')`): that reads someone else's code. Wider than
 * "literals passed to an error constructor", so a code made by another function (`failure('FEED_EMPTY', …)`,
 * `issueAt(…, 'POLLER_X')`) or kept in a field cannot slip by; the few code-shaped strings that are not codes
 * are listed by name in `NOT_CODES`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const CODE_LITERAL = /(['"])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\1/g;
// What may stand right before a literal that is only read: a comparison, a `case`, a membership test.
const READ_BEFORE = /(?:[!=]==?|\bcase|\.(?:startsWith|endsWith|has|includes)\()\s*$/;

/** Code-shaped string literals of one source text that are not only compared against, sorted. */
export function codesIn(source: string): string[] {
  const out = new Set<string>();
  for (const m of source.matchAll(CODE_LITERAL)) {
    if (READ_BEFORE.test(source.slice(Math.max(0, m.index - 40), m.index))) continue;
    out.add(m[2]!);
  }
  return [...out].sort();
}

/** Code-shaped strings in the source that are not error codes, with the reason. */
export const NOT_CODES: Readonly<Record<string, string>> = {
  AGENT_ADMIN_URL: 'an environment variable (cli `ADMIN_URL_ENV`)',
  RATE_LIMIT_EXCEEDED: "a provider API's error reason, read from its answers (oauth2 `RATE_LIMIT_REASONS`)",
  RESOURCE_EXHAUSTED: "a provider API's error reason, read from its answers (oauth2 `RATE_LIMIT_REASONS`)",
};

/** Production sources under `dir`: no tests, no test support (`testing.ts`, `testing/`, `test-*.ts`). */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory())
      return f === 'testing' || f === 'node_modules' || f === 'dist' ? [] : sourceFiles(p);
    const isSource =
      f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('testing.ts') && !f.startsWith('test-');
    return isSource ? [p] : [];
  });
}

/** Node's and undici's codes: the source reads them (e.g. a set of "daemon not running" causes), never makes them. */
const FOREIGN_PREFIXES: readonly string[] = ['ERR_', 'UND_ERR_'];

const isForeign = (code: string): boolean => FOREIGN_PREFIXES.some((p) => code.startsWith(p));

/**
 * Every code the files use that is neither in `listed`, nor in `NOT_CODES`, nor foreign, with the first file
 * using it.
 */
export function unlistedCodes(
  files: readonly { path: string; text: string }[],
  listed: ReadonlySet<string>,
): { code: string; file: string }[] {
  const seen = new Map<string, string>();
  for (const f of files)
    for (const code of codesIn(f.text))
      if (!listed.has(code) && !Object.hasOwn(NOT_CODES, code) && !isForeign(code) && !seen.has(code))
        seen.set(code, f.path);
  return [...seen].map(([code, file]) => ({ code, file })).sort((a, b) => a.code.localeCompare(b.code));
}

/** The sources of every package and of the daemon, paths relative to `root`. */
export function workspaceSources(root: string): { path: string; text: string }[] {
  const dirs = [
    ...readdirSync(join(root, 'packages')).map((p) => join(root, 'packages', p, 'src')),
    join(root, 'apps', 'daemon', 'src'),
  ];
  return dirs.flatMap(sourceFiles).map((p) => ({ path: relative(root, p), text: readFileSync(p, 'utf8') }));
}
