// The benchmarks that take seconds in their quick mode run here on every change, so that one which no longer
// runs (a module or an export it reads has moved) is found at once rather than at the next `pnpm bench`.
// Their figures are not checked: targets are for benchmarks, never for timed tests (so `log.mjs`, whose exit
// status is its allocation target, is not here). The others watch the daemon over windows of a minute or more
// and are left to `pnpm bench`.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');

/** Each quick bench, with the line of its report that says it measured what it measures. */
const QUICK_BENCHES: [name: string, reportLine: RegExp][] = [
  ['config-load', /target: 50 agents median < 20 ms \(warm\) -> /],
  ['turns', /target: overhead per turn < 2 ms -> /],
  ['rss', /overhead vs plain: CPU\/tick \d/],
  ['metrics', / 1000 jobs {2}now +\d/],
  ['cli', /target: agent pollers list <= 2x node -e 0 -> /],
];

describe('benchmarks in their quick mode', () => {
  it.each(QUICK_BENCHES)(
    'bench/%s.mjs runs to its report',
    (name, reportLine) => {
      const r = spawnSync(process.execPath, [join(root, 'bench', `${name}.mjs`), '--quick'], {
        encoding: 'utf8',
        timeout: 50_000,
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(reportLine);
    },
    60_000,
  );
});
