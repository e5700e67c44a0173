/**
 * A lease holder stopped (real SIGSTOP) between two sends of a multi-item tick, past its TTL, while a second
 * process takes the lease over and delivers the rest; then continued (SIGCONT). It must send nothing more:
 * its trust window ran out while it was stopped. Runs the BUILT package (`pnpm exec tsc -b` first).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'worker.mjs');
const RUNS = 10;
/** Runs at the same time: each has its own state file and processes. */
const PARALLEL = 2;
const ITEMS = 5;
// The TTL is 1 s (`lease_ttl_factor` x 30 s is less); the trust window is half of it at this size, long
// enough for a loaded machine to send item 1 in it.
const LEASE = { minLeaseTtlMs: 1000, leaseFactor: 0.01, everySecs: 30, mode: 'items', items: ITEMS };

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
const lines = (f: string) => read(f).split('\n').filter(Boolean);

async function waitFor(what: string, pred: () => boolean, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The process is stopped (state `T` in /proc), not merely idle. */
function isStopped(pid: number): boolean {
  const stat = read(`/proc/${pid}/stat`);
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
}

/** One run: returns what the stale holder sent after it was continued, and every send in order. */
async function staleHolderRun(run: number): Promise<{ afterCont: string[]; sends: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'poller-stale-'));
  dirs.push(dir);
  const sends = join(dir, 'sends.log');
  const start = (holder: string, extra: Record<string, unknown>) => {
    const cfg = {
      db: join(dir, 'poller.db'),
      events: join(dir, 'events.log'),
      deliveries: join(dir, 'deliveries.log'),
      log: join(dir, `${holder}.log`),
      metrics: join(dir, `${holder}.metrics`),
      sends,
      holder,
      deliveryMs: 1,
      ...LEASE,
      ...extra,
    };
    const child = spawn(process.execPath, [WORKER], {
      env: { ...process.env, POLLER_FIXTURE: JSON.stringify(cfg) },
      stdio: 'ignore',
    });
    children.push(child);
    return child;
  };
  const a = `a${run}`;
  const b = `b${run}`;
  const staleHolder = start(a, { stopAfterItem: '1' });
  await waitFor(`${a} to stop itself after item 1`, () => isStopped(staleHolder.pid!));
  const sentBeforeStop = lines(sends).filter((l) => l.startsWith(`${a} `));
  const takeover = start(b, {});
  await waitFor(
    `${b} to deliver the rest`,
    () => lines(sends).filter((l) => l.startsWith(`${b} `)).length >= ITEMS - 1,
  );
  const before = lines(sends).length;
  staleHolder.kill('SIGCONT');
  await waitFor(`${a} to give its tick up`, () => read(join(dir, `${a}.log`)).includes('lost its lease'));
  // A send would have come before that log line; the pause only makes a late one visible.
  await new Promise((r) => setTimeout(r, 50));
  const afterCont = lines(sends)
    .slice(before)
    .filter((l) => l.startsWith(`${a} `));
  staleHolder.kill('SIGKILL');
  takeover.kill('SIGKILL');
  expect(sentBeforeStop).toEqual([`${a} 1`]);
  return { afterCont, sends: lines(sends) };
}

describe('a stale lease holder never sends', () => {
  it(`SIGSTOP between two sends past the TTL, another process delivers, SIGCONT: 0 sends after SIGCONT in ${RUNS} runs`, async () => {
    const results: Awaited<ReturnType<typeof staleHolderRun>>[] = [];
    for (let run = 0; run < RUNS; run += PARALLEL)
      results.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(PARALLEL, RUNS - run) }, (_, i) => staleHolderRun(run + i)),
        )),
      );
    const late = results.flatMap((r) => r.afterCont);
    expect(late, 'sends of stopped holders after SIGCONT').toEqual([]);
    // Every item went out exactly once: item 1 by the stopped holder, the rest by the one that took over.
    for (const r of results)
      expect(r.sends.map((l) => l.split(' ')[1]).sort()).toEqual(
        Array.from({ length: ITEMS }, (_, i) => String(i + 1)).sort(),
      );
  }, 60_000);
});
