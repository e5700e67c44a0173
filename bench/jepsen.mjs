// The long fault run of cluster mode: `pnpm jepsen --minutes N --seed S` (nightly; not part of `pnpm bench`).
// The harness is TypeScript under apps/daemon/test/cluster; this compiles it next to the daemon's
// dependencies (so `@agent/*` resolve to their builds) and runs it. `pnpm build` first (the script does).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
const compiled = spawnSync(tsc, ['-p', join(root, 'apps/daemon/test/cluster/tsconfig.jepsen.json')], {
  stdio: 'inherit',
});
if (compiled.status !== 0) {
  console.error('jepsen: the harness did not compile (see above)');
  process.exit(1);
}
const entry = join(root, 'apps/daemon/node_modules/.cache/jepsen/jepsen.js');
const { runJepsen } = await import(pathToFileURL(entry).href);
process.exit(await runJepsen(process.argv.slice(2), (line) => console.log(line)));
