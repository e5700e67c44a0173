// Small process helpers of the cluster fault harness: free ports, signals by PID, teardown on exit.
import { readFileSync } from 'node:fs';
import { sleep } from '@agent/timers';

/** A port that was free a moment ago: the one helper the kinds' server tests use too. */
export { freeLoopbackPort as freePort } from '@agent/poller-core/testing';

/** The state letter of `/proc/<pid>/stat` (R, S, T stopped, Z zombie…), or undefined when there is none. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const end = stat.lastIndexOf(')');
    return stat.slice(end + 2, end + 3);
  } catch {
    return undefined;
  }
}

/** Alive and not a zombie (a daemonized server's zombie lingers when nothing reaps it). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = processState(pid);
  return state !== undefined && state !== 'Z';
}

/** SIGSTOP, then waits until the kernel shows the process stopped (signals are delivered asynchronously). */
export async function stopProcess(pid: number): Promise<void> {
  if (!processAlive(pid)) return;
  process.kill(pid, 'SIGSTOP');
  const t0 = performance.now();
  while (processAlive(pid) && processState(pid) !== 'T' && performance.now() - t0 < 5000) await sleep(5);
}

/** Sends `signal`, waits until the process is gone; SIGKILL after `graceMs`. */
export async function killAndWait(pid: number, signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
  if (pid <= 0 || !processAlive(pid)) return;
  process.kill(pid, signal);
  const t0 = performance.now();
  while (processAlive(pid)) {
    if (performance.now() - t0 > graceMs) {
      process.kill(pid, 'SIGKILL');
      graceMs = Infinity;
    }
    await sleep(20);
  }
}

const armed = new Map<number, NodeJS.Signals>();
let exitHookInstalled = false;

/**
 * Kills `pid` with `signal` when this process exits (a failed test, an uncaught error, Ctrl-C), so no server
 * outlives its harness. Returns the disarm function, called on an orderly stop.
 */
export function onExitKill(pid: number, signal: NodeJS.Signals): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const [p, s] of armed) {
        try {
          process.kill(p, s);
        } catch {
          // already gone
        }
      }
    });
  }
  armed.set(pid, signal);
  return () => void armed.delete(pid);
}

/** SIGCONT, then waits until the kernel no longer shows the process stopped. */
export async function continueProcess(pid: number): Promise<void> {
  if (!processAlive(pid)) return;
  process.kill(pid, 'SIGCONT');
  const t0 = performance.now();
  while (processState(pid) === 'T' && performance.now() - t0 < 5000) await sleep(5);
}
