/**
 * A bundle as a config directory that `loadConfig` reads like any other: the bundle's files plus this
 * host's own host-local files, copied. Load it with the daemon's usual `cwd`: `${file:}` and relative
 * paths (secrets, workspaces) resolve against the daemon's working directory, never against this
 * directory, so they still name this host's files.
 */
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { assertClusterWideFiles, HOST_LOCAL_FILES } from './bundle-files.js';
import type { Bundle } from './bundle.js';

const MARKER = '.bundle';

export interface MaterializeOptions {
  bundle: Pick<Bundle, 'version' | 'hash' | 'files'>;
  /** The daemon's own `--config-dir`: where the host-local files are. */
  localConfigDir: string;
  /** Where bundle directories go, e.g. `<data_dir>/cluster`; each version gets `config-v<version>`. */
  parentDir: string;
}

/**
 * Writes `<parentDir>/config-v<version>` (private, written aside and renamed into place) and returns its
 * path. A directory already holding this bundle (same hash) is reused; host-local files are copied afresh
 * each time, so an edited `runtime.yaml` is seen at the next load.
 */
export function materializeBundle(o: MaterializeOptions): string {
  assertClusterWideFiles(o.bundle.files);
  const target = join(o.parentDir, `config-v${o.bundle.version}`);
  if (readMarker(target) !== o.bundle.hash) {
    mkdirSync(o.parentDir, { recursive: true, mode: 0o700 });
    const tmp = `${target}.tmp-${randomBytes(4).toString('hex')}`;
    try {
      for (const [rel, text] of Object.entries(o.bundle.files)) writePrivate(join(tmp, rel), text);
      writePrivate(join(tmp, MARKER), o.bundle.hash);
      rmSync(target, { recursive: true, force: true });
      renameSync(tmp, target);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  for (const rel of HOST_LOCAL_FILES) {
    const from = join(o.localConfigDir, rel);
    const to = join(target, rel);
    if (existsSync(from)) copyFileSync(from, to);
    else rmSync(to, { force: true });
  }
  return target;
}

function readMarker(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, MARKER), 'utf8');
  } catch {
    return undefined;
  }
}

function writePrivate(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, text, { mode: 0o600 });
}
