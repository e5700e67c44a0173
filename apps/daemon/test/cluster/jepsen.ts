// The long fault run (`pnpm jepsen --minutes N --seed S`), started by bench/jepsen.mjs from the compiled
// harness: the whole fault run (cluster-run.ts) with the chat workload and a nemesis playing for N minutes,
// its report printed.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runClusterFaults } from './cluster-run.js';
import { randomSeed } from './nemesis.js';
import { findPgBin } from './servers.js';
import { faketimeLibrary } from './skew.js';

export interface JepsenOptions {
  minutes: number;
  seed: number;
  daemons: number;
  jobs: number;
}

export const JEPSEN_USAGE =
  'usage: pnpm jepsen [--minutes N] [--seed S]   (N > 0, default 10; S an integer, default random)';

/** `--minutes N --seed S` (also `--minutes=N`); an error naming the bad argument and the usage otherwise. */
export function parseJepsenArgs(argv: readonly string[], seed: () => number = randomSeed): JepsenOptions {
  const o: JepsenOptions = { minutes: 10, seed: Number.NaN, daemons: 3, jobs: 24 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split('=', 2) as [string, string | undefined];
    if (flag !== '--minutes' && flag !== '--seed')
      throw new Error(`unknown argument ${argv[i]}\n${JEPSEN_USAGE}`);
    const value = inline ?? argv[++i];
    const n = Number(value);
    if (value === undefined || value.trim() === '' || !Number.isFinite(n))
      throw new Error(`${flag} needs a number, got ${value ?? 'nothing'}\n${JEPSEN_USAGE}`);
    if (flag === '--minutes') {
      if (!(n > 0)) throw new Error(`--minutes must be > 0, got ${value}\n${JEPSEN_USAGE}`);
      o.minutes = n;
    } else {
      if (!Number.isSafeInteger(n) || n < 0)
        throw new Error(`--seed must be a non-negative integer, got ${value}\n${JEPSEN_USAGE}`);
      o.seed = n;
    }
  }
  if (Number.isNaN(o.seed)) o.seed = seed();
  return o;
}

/** Runs the fault test; resolves to the process exit code: 0 PASS, 1 FAIL (or no run), 2 bad arguments. */
export async function runJepsen(argv: readonly string[], out: (line: string) => void): Promise<number> {
  let o: JepsenOptions;
  try {
    o = parseJepsenArgs(argv);
  } catch (err) {
    out(`jepsen: ${(err as Error).message}`);
    return 2;
  }
  out(`jepsen: seed=${o.seed} minutes=${o.minutes} daemons=${o.daemons} (replay with --seed ${o.seed})`);
  try {
    out(`jepsen: PostgreSQL binaries in ${findPgBin()}; libfaketime at ${faketimeLibrary()}`);
    const t0 = Date.now();
    const run = await runClusterFaults({
      seed: o.seed,
      nemesisMs: o.minutes * 60_000,
      jobs: o.jobs,
      daemons: o.daemons,
      chat: true,
      log: out,
      artifacts: { dir: mkdtempSync(join(tmpdir(), `jepsen-${o.seed}-`)) },
    });
    out(run.report);
    out(`jepsen: seed=${o.seed} took ${Math.round((Date.now() - t0) / 1000)} s`);
    return run.result.ok ? 0 : 1;
  } catch (err) {
    out(`jepsen: NOT RUN: ${(err as Error).stack ?? String(err)}`);
    return 1;
  }
}
