/**
 * Process-level tests: real child processes on one SQLite file, killed and stopped with signals.
 * They run the BUILT package (`pnpm exec tsc -b packages/poller-core` first).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const WORKER = join(here, 'fixtures', 'worker.mjs');
const KILL_ROUNDS = Number(process.env.POLLER_KILL_ROUNDS ?? 5);

let dir: string;
let children: ChildProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'poller-proc-'));
});
afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children = [];
  rmSync(dir, { recursive: true, force: true });
});

interface WorkerConfig {
  holder: string;
  mode: 'slow' | 'hang' | 'items' | 'ok';
  tickMs?: number;
  deliveryMs?: number;
  minLeaseTtlMs?: number;
  leaseFactor?: number;
  everySecs?: number;
}

function files(holder: string) {
  return {
    db: join(dir, 'poller.db'),
    events: join(dir, 'events.log'),
    deliveries: join(dir, 'deliveries.log'),
    log: join(dir, `${holder}.log`),
    metrics: join(dir, `${holder}.metrics`),
  };
}

function startWorker(cfg: WorkerConfig): ChildProcess {
  const env = { ...process.env, POLLER_FIXTURE: JSON.stringify({ ...files(cfg.holder), ...cfg }) };
  const child = spawn(process.execPath, [WORKER], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  child.on('exit', (code) => {
    if (code !== 0 && code !== null && err) console.error(`worker ${cfg.holder} exited ${code}: ${err}`);
  });
  children.push(child);
  return child;
}

const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
const lines = (f: string) => read(f).split('\n').filter(Boolean);

async function waitFor(what: string, pred: () => boolean, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const exited = (c: ChildProcess) =>
  new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));

function cursorInDb(): string | null {
  const db = new Database(join(dir, 'poller.db'), { readonly: true });
  try {
    const row = db.prepare("SELECT cursor FROM poll_state WHERE job_id = 'j'").get() as
      { cursor: string | null } | undefined;
    return row?.cursor ? (JSON.parse(row.cursor) as string) : null;
  } finally {
    db.close();
  }
}

describe('several processes on one state file', () => {
  it('two processes never tick one job at the same time', async () => {
    const ev = files('a').events;
    const cfg = { mode: 'slow' as const, tickMs: 250, minLeaseTtlMs: 1000, everySecs: 1 };
    const a = startWorker({ holder: 'a', ...cfg });
    const b = startWorker({ holder: 'b', ...cfg });
    await waitFor('8 finished ticks', () => lines(ev).filter((l) => l.startsWith('end')).length >= 8, 30_000);
    a.kill('SIGTERM');
    b.kill('SIGTERM');
    await Promise.all([exited(a), exited(b)]);
    // Intervals [start, end] of all ticks must not overlap.
    const open: Record<string, number> = {};
    const spans: [number, number, string][] = [];
    for (const l of lines(ev)) {
      const [what, holder, t] = l.split(' ');
      if (what === 'start') open[holder!] = Number(t);
      if (what === 'end') spans.push([open[holder!]!, Number(t), holder!]);
    }
    spans.sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < spans.length; i++)
      expect(spans[i]![0], JSON.stringify(spans)).toBeGreaterThanOrEqual(spans[i - 1]![1]);
    expect(spans.length).toBeGreaterThanOrEqual(8);
  }, 60_000);

  it('SIGKILL mid-tick: another process takes over after the TTL and counts one takeover', async () => {
    const ev = files('a').events;
    const a = startWorker({ holder: 'a', mode: 'hang', minLeaseTtlMs: 1500 });
    await waitFor('a tick of a', () => lines(ev).some((l) => l.startsWith('start a')));
    const killedAt = Date.now();
    a.kill('SIGKILL');
    await exited(a);
    const b = startWorker({ holder: 'b', mode: 'ok', minLeaseTtlMs: 1500 });
    await waitFor('a tick of b', () => lines(ev).some((l) => l.startsWith('end b')));
    const startedB = Number(
      lines(ev)
        .find((l) => l.startsWith('start b'))!
        .split(' ')[2],
    );
    expect(startedB - killedAt).toBeGreaterThanOrEqual(1000); // waited for the dead holder's lease
    await waitFor('takeover metric', () =>
      read(files('b').metrics).includes('poller_lease_takeovers_total{job_id="j"} 1'),
    );
    b.kill('SIGTERM');
    await exited(b);
    expect(cursorInDb()).toBe('from-b');
  }, 60_000);

  it('SIGSTOP past the TTL, then SIGCONT: the stale holder cannot write', async () => {
    const ev = files('a').events;
    const a = startWorker({
      holder: 'a',
      mode: 'slow',
      tickMs: 600,
      minLeaseTtlMs: 1000,
      leaseFactor: 0.01,
      everySecs: 30,
    });
    await waitFor('a tick of a', () => lines(ev).some((l) => l.startsWith('start a')));
    a.kill('SIGSTOP');
    const b = startWorker({ holder: 'b', mode: 'ok', minLeaseTtlMs: 1000, leaseFactor: 0.01, everySecs: 30 });
    await waitFor('b to tick', () => lines(ev).some((l) => l.startsWith('end b')));
    await waitFor('b to commit', () => cursorInDb() === 'from-b');
    a.kill('SIGCONT');
    await waitFor('a to notice', () => read(files('a').log).includes('lost its lease'));
    expect(cursorInDb()).toBe('from-b');
    a.kill('SIGTERM');
    b.kill('SIGTERM');
    await Promise.all([exited(a), exited(b)]);
    expect(cursorInDb()).toBe('from-b');
  }, 60_000);

  it(`SIGKILL during a 10-item dispatch, ${KILL_ROUNDS} times: no item lost, duplicates only of the item in flight`, async () => {
    const del = files('x').deliveries;
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let kills = 0;
    for (let round = 0; round < KILL_ROUNDS && new Set(lines(del)).size < 10; round++) {
      const before = lines(del).length;
      const w = startWorker({
        holder: `w${round}`,
        mode: 'items',
        deliveryMs: 25,
        minLeaseTtlMs: 300,
        leaseFactor: 0.1,
      });
      // Kill after this run delivered at least one item, at a pseudo-random moment.
      await waitFor('a delivery', () => lines(del).length > before || new Set(lines(del)).size >= 10, 20_000);
      await new Promise((r) => setTimeout(r, Math.floor(rand() * 40)));
      w.kill('SIGKILL');
      await exited(w);
      kills++;
    }
    const last = startWorker({
      holder: 'final',
      mode: 'items',
      deliveryMs: 5,
      minLeaseTtlMs: 300,
      leaseFactor: 0.1,
    });
    await waitFor('every item delivered', () => new Set(lines(del)).size >= 10, 30_000);
    last.kill('SIGTERM');
    await exited(last);
    const got = lines(del).map(Number);
    // Oldest first, no gaps; a repeat is only ever the item delivered right before (the one in flight).
    expect(got[0]).toBe(1);
    for (let i = 1; i < got.length; i++)
      expect([got[i - 1], got[i - 1]! + 1], got.join(',')).toContain(got[i]);
    expect(new Set(got).size).toBe(10);
    expect(got.length - 10).toBeLessThanOrEqual(kills);
  }, 120_000);
});
