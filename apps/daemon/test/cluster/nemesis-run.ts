// The nemesis's effects: plays a schedule (nemesis.ts) against daemon handles and the database. Daemons are
// reached only through `DaemonHandle`, so whatever starts them (the three-daemon run) plugs in here.
import { sleep } from '@agent/timers';
import { BLACKHOLE, PASS, type ProxyMode } from './fault-proxy.js';
import type { FaultEvent } from './nemesis.js';
import { continueProcess, killAndWait, stopProcess } from './process-tools.js';

/** What the nemesis needs of one daemon. */
export interface DaemonHandle {
  /** Its `daemon_id`; names the victim in the record of applied faults. */
  readonly id: string;
  /** The PID of the running process (changes on restart). */
  readonly pid: number;
  /** The proxies on its links to PostgreSQL and NATS. */
  readonly dbProxy: { setMode(mode: ProxyMode): void };
  readonly natsProxy: { setMode(mode: ProxyMode): void };
  /**
   * Stops the process if it still runs (the handle chooses how; SIGTERM is the expected choice) and starts
   * it again on the same work directory, under a wall clock `skewSecs` off when given (see skew.ts).
   * Resolves once the daemon has started.
   */
  restart(options?: { skewSecs?: number }): Promise<void>;
}

export interface NemesisTarget {
  daemons: readonly DaemonHandle[];
  db: { restart(options: { immediate: boolean }): Promise<void> };
}

/** A fault as it happened, on the harness's wall clock (epoch ms), for the history checker. */
export interface AppliedFault {
  kind: FaultEvent['kind'];
  /** `daemon_id` of the victim; absent for db-restart. */
  daemonId?: string;
  startedAt: number;
  healedAt: number;
  skewSecs?: number;
}

export interface RunNemesisOptions {
  /** Aborting ends the run early; the fault in progress is healed first. */
  signal?: AbortSignal;
  now?: () => number;
  log?: (line: string) => void;
  /** Called once a fault is in place (e.g. to issue `agent reload` inside a NATS partition). */
  onFaultStarted?(fault: FaultEvent, daemon: DaemonHandle | undefined): Promise<void> | void;
  /**
   * Picks the victim of a fault that hits one daemon when it starts (e.g. whoever holds some lease then);
   * undefined keeps the schedule's target.
   */
  aim?(fault: FaultEvent): number | undefined;
}

/** Puts one fault in place, waits its duration (cut short by `abort`), heals it. */
async function applyFault(e: FaultEvent, target: NemesisTarget, o: RunNemesisOptions): Promise<AppliedFault> {
  const now = o.now ?? Date.now;
  const d = e.target === undefined ? undefined : target.daemons[e.target];
  if (e.target !== undefined && d === undefined) throw new Error(`nemesis: no daemon ${e.target}`);
  const startedAt = now();
  const hold = async (): Promise<void> => {
    await o.onFaultStarted?.(e, d);
    await sleep(e.durationMs - (now() - startedAt), o.signal);
  };
  switch (e.kind) {
    case 'kill':
      await killAndWait(d!.pid, 'SIGKILL');
      await hold();
      await d!.restart();
      break;
    case 'pause': {
      const pid = d!.pid;
      await stopProcess(pid);
      await hold().finally(() => continueProcess(pid));
      break;
    }
    case 'partition-db':
    case 'partition-nats': {
      const proxy = e.kind === 'partition-db' ? d!.dbProxy : d!.natsProxy;
      proxy.setMode(BLACKHOLE);
      await hold().finally(() => proxy.setMode(PASS));
      break;
    }
    case 'skew':
      await d!.restart({ skewSecs: e.skewSecs ?? 0 });
      await hold();
      await d!.restart();
      break;
    case 'db-restart':
      await target.db.restart({ immediate: true });
      await o.onFaultStarted?.(e, undefined);
      break;
  }
  const applied: AppliedFault = { kind: e.kind, startedAt, healedAt: now() };
  if (d) applied.daemonId = d.id;
  if (e.skewSecs !== undefined) applied.skewSecs = e.skewSecs;
  return applied;
}

/**
 * Plays `schedule` from now: each fault at its offset, healed after its duration. Returns what was applied,
 * in order. Stops early (healed) when `signal` aborts.
 */
export async function runNemesis(
  schedule: readonly FaultEvent[],
  target: NemesisTarget,
  o: RunNemesisOptions = {},
): Promise<AppliedFault[]> {
  const now = o.now ?? Date.now;
  const t0 = now();
  const applied: AppliedFault[] = [];
  for (const planned of schedule) {
    if (!(await sleep(planned.at - (now() - t0), o.signal))) break;
    const aimed = planned.target === undefined ? undefined : o.aim?.(planned);
    const e = aimed === undefined ? planned : { ...planned, target: aimed };
    o.log?.(`nemesis t+${((now() - t0) / 1000).toFixed(1)}s ${e.kind} ${e.target ?? 'all'}`);
    applied.push(await applyFault(e, target, o));
    if (o.signal?.aborted) break;
  }
  return applied;
}

/** Heals whatever a crashed run may have left: links back to pass, stopped processes continued. */
export async function healAll(target: NemesisTarget): Promise<void> {
  for (const d of target.daemons) {
    d.dbProxy.setMode(PASS);
    d.natsProxy.setMode(PASS);
    await continueProcess(d.pid);
  }
}
