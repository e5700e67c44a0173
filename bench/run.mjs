// Runs every benchmark and prints figures and ratios against their targets. `pnpm bench [name...]`.
// Benchmarks import the built packages: `pnpm build` first (the root `bench` script does).
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const benches = readdirSync(here)
  // jepsen.mjs is the nightly fault run (`pnpm jepsen`), not a benchmark; side-by-side.mjs compares this
  // checkout with another one it is given.
  .filter((f) => f.endsWith('.mjs') && !['run.mjs', 'jepsen.mjs', 'side-by-side.mjs'].includes(f))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.mjs$/, '')));
let failed = 0;
for (const f of benches) {
  console.log(`\n== ${f.replace(/\.mjs$/, '')}`);
  const r = spawnSync(process.execPath, [join(here, f), ...flags], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
