// The nemesis's effects on real processes and real proxies, with short faults.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';
import type { FaultEvent } from './nemesis.js';
import { healAll, runNemesis, type DaemonHandle, type NemesisTarget } from './nemesis-run.js';
import { killAndWait, processAlive, processState, stopProcess } from './process-tools.js';
import { skewedCommand } from './skew.js';

const IDLE = ['-e', 'setInterval(() => {}, 1000)'];
const children: ChildProcess[] = [];
const proxies: FaultProxy[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) await killAndWait(c.pid ?? 0, 'SIGKILL');
  for (const p of proxies.splice(0)) await p.close();
});

function spawnIdle(skewSecs?: number): ChildProcess {
  const cmd =
    skewSecs === undefined
      ? { command: process.execPath, args: IDLE, env: {} }
      : skewedCommand(process.execPath, IDLE, skewSecs);
  const c = spawn(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env }, stdio: 'ignore' });
  children.push(c);
  return c;
}

const state = (pid: number): string => processState(pid) ?? 'gone';

/** A handle on an idle node process, recording its restarts. */
async function idleDaemon(
  id: string,
): Promise<DaemonHandle & { restarts: (number | undefined)[]; dbProxy: FaultProxy; natsProxy: FaultProxy }> {
  let proc = spawnIdle();
  const restarts: (number | undefined)[] = [];
  const target = { host: '127.0.0.1', port: 9 };
  const [dbProxy, natsProxy] = [await startFaultProxy({ target }), await startFaultProxy({ target })];
  proxies.push(dbProxy, natsProxy);
  return {
    id,
    get pid() {
      return proc.pid ?? 0;
    },
    dbProxy,
    natsProxy,
    restarts,
    async restart(o = {}) {
      restarts.push(o.skewSecs);
      await killAndWait(proc.pid ?? 0, 'SIGTERM');
      proc = spawnIdle(o.skewSecs);
    },
  };
}

describe('nemesis effects', () => {
  it('kills, pauses, partitions, skews and restarts the database, each healed after its duration', async () => {
    const d = await idleDaemon('d0');
    const dbRestarts: boolean[] = [];
    const target: NemesisTarget = {
      daemons: [d],
      db: { restart: async (o) => void dbRestarts.push(o.immediate) },
    };
    const seen: string[] = [];
    const schedule: FaultEvent[] = [
      { at: 0, kind: 'kill', target: 0, durationMs: 100 },
      { at: 150, kind: 'pause', target: 0, durationMs: 100 },
      { at: 300, kind: 'partition-db', target: 0, durationMs: 100 },
      { at: 450, kind: 'partition-nats', target: 0, durationMs: 100 },
      { at: 600, kind: 'skew', target: 0, durationMs: 100, skewSecs: -90 },
      { at: 750, kind: 'db-restart', durationMs: 0 },
    ];
    const firstPid = d.pid;
    const applied = await runNemesis(schedule, target, {
      onFaultStarted(e) {
        if (e.kind === 'kill') seen.push(`kill alive=${processAlive(firstPid)}`);
        if (e.kind === 'pause') seen.push(`pause state=${state(d.pid)}`);
        if (e.kind === 'partition-db') seen.push(`db ${d.dbProxy.mode.kind} nats ${d.natsProxy.mode.kind}`);
        if (e.kind === 'partition-nats') seen.push(`db ${d.dbProxy.mode.kind} nats ${d.natsProxy.mode.kind}`);
        if (e.kind === 'db-restart') seen.push(`db restarts ${dbRestarts.length}`);
      },
    });
    expect(seen).toEqual([
      'kill alive=false',
      'pause state=T',
      'db blackhole nats pass',
      'db pass nats blackhole',
      'db restarts 1',
    ]);
    expect(d.restarts).toEqual([undefined, -90, undefined]);
    expect(dbRestarts).toEqual([true]);
    expect(applied.map((a) => [a.kind, a.daemonId, a.skewSecs])).toEqual([
      ['kill', 'd0', undefined],
      ['pause', 'd0', undefined],
      ['partition-db', 'd0', undefined],
      ['partition-nats', 'd0', undefined],
      ['skew', 'd0', -90],
      ['db-restart', undefined, undefined],
    ]);
    for (const a of applied.slice(0, 5)) expect(a.healedAt - a.startedAt).toBeGreaterThanOrEqual(95);
    expect(processAlive(d.pid)).toBe(true);
    expect(state(d.pid)).not.toBe('T');
    expect([d.dbProxy.mode.kind, d.natsProxy.mode.kind]).toEqual(['pass', 'pass']);
  });

  it('an abort ends the run with the fault in progress healed', async () => {
    const d = await idleDaemon('d1');
    const target: NemesisTarget = { daemons: [d], db: { restart: async () => {} } };
    const ctl = new AbortController();
    const applied = await runNemesis(
      [
        { at: 0, kind: 'pause', target: 0, durationMs: 60_000 },
        { at: 61_000, kind: 'kill', target: 0, durationMs: 1000 },
      ],
      target,
      {
        onFaultStarted: () => ctl.abort(),
        signal: ctl.signal,
      },
    );
    expect(applied.map((a) => a.kind)).toEqual(['pause']);
    expect(applied[0]!.healedAt - applied[0]!.startedAt).toBeLessThan(1000);
    expect(state(d.pid)).not.toBe('T');
  });

  it('aims a fault at the daemon its aim picks when it starts, else at the scheduled one', async () => {
    const daemons = [await idleDaemon('d3'), await idleDaemon('d4')];
    const target: NemesisTarget = { daemons, db: { restart: async () => {} } };
    const asked: string[] = [];
    const applied = await runNemesis(
      [
        { at: 0, kind: 'partition-db', target: 0, durationMs: 10 },
        { at: 20, kind: 'partition-nats', target: 0, durationMs: 10 },
        { at: 40, kind: 'db-restart', durationMs: 0 },
      ],
      target,
      {
        aim(e) {
          asked.push(e.kind);
          return e.kind === 'partition-db' ? 1 : undefined;
        },
      },
    );
    expect(applied.map((a) => [a.kind, a.daemonId])).toEqual([
      ['partition-db', 'd4'],
      ['partition-nats', 'd3'],
      ['db-restart', undefined],
    ]);
    // A fault on no one daemon (db-restart) is not aimed.
    expect(asked).toEqual(['partition-db', 'partition-nats']);
  });

  it('healAll continues stopped processes and heals every link', async () => {
    const d = await idleDaemon('d2');
    await stopProcess(d.pid);
    expect(state(d.pid)).toBe('T');
    d.dbProxy.setMode({ kind: 'blackhole' });
    d.natsProxy.setMode({ kind: 'reset' });
    await healAll({ daemons: [d], db: { restart: async () => {} } });
    expect(state(d.pid)).not.toBe('T');
    expect([d.dbProxy.mode.kind, d.natsProxy.mode.kind]).toEqual(['pass', 'pass']);
  });
});

describe('skewed clock', () => {
  it.each([90, -90])(
    'faketime shifts Date by %i s while timers keep monotonic time, in the process signalled',
    async (skew) => {
      const cmd = skewedCommand(
        process.execPath,
        [
          '-e',
          'const t0 = performance.now(); const w = Date.now(); setTimeout(() => console.log(w, Math.round(performance.now() - t0), process.pid), 200)',
        ],
        skew,
      );
      const before = Date.now();
      let pid = 0;
      const out = await new Promise<string>((resolve) => {
        const c = spawn(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env } });
        pid = c.pid ?? -1;
        let text = '';
        c.stdout.on('data', (b: Buffer) => (text += b.toString()));
        c.once('exit', () => resolve(text));
      });
      const [wall, waited, ownPid] = out.trim().split(' ').map(Number);
      // The skewed clock runs in the spawned process itself (no wrapper in between), so signals reach it.
      expect(ownPid).toBe(pid);
      expect(wall! - before).toBeGreaterThan(skew * 1000 - 5000);
      expect(wall! - before).toBeLessThan(skew * 1000 + 5000);
      expect(waited).toBeGreaterThanOrEqual(195);
      expect(waited).toBeLessThan(2000);
    },
  );

  it('refuses a fractional skew', () => {
    expect(() => skewedCommand('node', [], 1.5)).toThrow(/whole seconds, got 1.5/);
  });
});
