// Builds docs/errors.md from the error tables of the package READMEs (rows whose first cell is a code).
// `node scripts/gen-errors-doc.mjs` writes it; `--check` exits 1 when the file is out of date.
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dirs = [...readdirSync(join(root, 'packages')).map((d) => `packages/${d}`), 'apps/daemon'].sort();

export function renderErrorsDoc() {
  const out = [
    '# Error codes',
    '',
    '<!-- Generated from the error tables of the package READMEs by `pnpm docs:errors`; do not edit by hand. -->',
    '',
    'Every error the project raises or reports carries a stable `code`. Codes are grouped by the package that',
    'defines them; each package README has the same table next to its API.',
    '',
  ];
  for (const dir of dirs) {
    const readme = join(root, dir, 'README.md');
    if (!existsSync(readme)) continue;
    const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')).name;
    const rows = readFileSync(readme, 'utf8')
      .split('\n')
      .filter((l) => /^\|\s*`[A-Z][A-Z0-9]*_[A-Z0-9_]+`\s*\|/.test(l))
      .map((l) =>
        l
          .split(/(?<!\\)\|/)
          .slice(1, -1)
          .map((c) => c.trim()),
      )
      .filter((cells) => cells.length >= 2);
    if (rows.length === 0) continue;
    out.push(`## ${pkg}`, '', '| code | meaning | what to do |', '| --- | --- | --- |');
    const seen = new Set();
    for (const cells of rows) {
      if (seen.has(cells[0])) continue;
      seen.add(cells[0]);
      out.push(`| ${cells[0]} | ${cells[1] ?? ''} | ${cells[2] ?? ''} |`);
    }
    out.push('');
  }
  return out.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = renderErrorsDoc();
  const target = join(root, 'docs', 'errors.md');
  if (process.argv.includes('--check')) {
    const same = existsSync(target) && readFileSync(target, 'utf8') === text;
    if (!same) console.error('docs/errors.md is out of date: run pnpm docs:errors');
    process.exit(same ? 0 : 1);
  }
  writeFileSync(target, text);
  console.log('wrote docs/errors.md');
}
