/**
 * The daemon's version, from `apps/daemon/package.json` (one level above both `src/` and `dist/`). Read once
 * with nothing but `node:fs`, so that client commands (`agent --version`) start fast.
 */
import { readFileSync } from 'node:fs';

export const DAEMON_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
