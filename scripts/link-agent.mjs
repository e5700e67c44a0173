// Puts `agent` on PATH; `pnpm start` runs it before the daemon. It `npm link`s apps/daemon: one symlink in npm's
// global bin pointing at this checkout's apps/daemon/dist/bin.js. npm installs nothing (the workspace's
// node_modules stay pnpm's). It does nothing when `agent` already is this checkout's bin or AGENT_LINK=0, and it
// never fails the start: when linking is not possible it says what to run instead.
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const app = join(root, 'apps', 'daemon');
const bin = join(app, 'dist', 'bin.js');
const say = (line) => process.stderr.write(`link-agent: ${line}\n`);

/** The first executable `name` on PATH, like `which`. */
function which(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

const real = (p) => {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
};

function main() {
  if (process.env.AGENT_LINK === '0') return;
  try {
    // A clean build writes the bin without the executable bit; a link to it would not run.
    chmodSync(bin, 0o755);
  } catch (err) {
    say(`cannot make ${bin} executable (${err.code ?? err.message}); build first: pnpm run build`);
    return;
  }
  const before = which('agent');
  if (before && real(before) === real(bin)) return;
  const r = spawnSync('npm', ['link', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: app,
    encoding: 'utf8',
  });
  const after = which('agent');
  if (r.status === 0 && after && real(after) === real(bin)) {
    say(`agent is on PATH: ${after} -> ${bin}`);
    return;
  }
  const why =
    r.error?.message ??
    (r.status !== 0
      ? (r.stderr
          .trim()
          .split('\n')
          .find((l) => /ERR/.test(l)) ?? `exit ${r.status}`)
      : after
        ? `${after} comes first on PATH and is another agent`
        : "npm's global bin directory is not on PATH");
  say(`could not put agent on PATH (npm link: ${why}); use node apps/daemon/dist/bin.js instead of agent`);
}

main();
