/** A running job in this process: its definition, timer, in-flight tick and the lock its work queues on. */
import { LeaseLostError } from './errors.js';
import type { CommitOps } from './store.js';
import type { JobDefinition } from './validate.js';

export interface JobRuntime {
  def: JobDefinition;
  /** Set when the job is replaced or removed: its ticks can no longer write (see `guardOf`). */
  retired: false | 'replaced' | 'removed';
  /** The running tick; pause, reset, replace, remove and shutdown abort it. */
  tick: AbortController | null;
  timer: unknown;
  /** The end of the job's queued work (it never rejects): all of it is done when this settles. */
  lock: Promise<unknown>;
  /** Locked operations queued or running: a count, not a set of them (a set weighed ~170 bytes a job). */
  pending: number;
}

export function newJob(def: JobDefinition): JobRuntime {
  return { def, retired: false, tick: null, timer: null, lock: Promise.resolve(), pending: 0 };
}

/** Resolves once the work the jobs have queued so far is done (work queued later is not waited for). */
export async function waitFor(jobs: Iterable<JobRuntime>): Promise<void> {
  const queued: Promise<unknown>[] = [];
  for (const rt of jobs) if (rt.pending > 0) queued.push(rt.lock);
  await Promise.all(queued);
}

/** Runs `fn` after every earlier locked operation of the job. */
export function withLock<T>(rt: JobRuntime, fn: () => Promise<T>): Promise<T> {
  const p = rt.lock.then(fn, fn);
  rt.pending++;
  const done = () => {
    rt.pending--;
  };
  rt.lock = p.then(done, done);
  return p;
}

/**
 * Throws `LeaseLostError` once the job was replaced or removed; checked before every write. One write of a
 * replaced job still passes: the record (seen id, delivery) of the item the channel accepted while the
 * replace waited for the tick. The new definition keeps the job's seen set (unless its source changed,
 * which clears it after this write), so it does not send that item again. The store's fence still judges it.
 */
export function guardOf(rt: JobRuntime): (ops?: CommitOps) => void {
  return (ops) => {
    if (!rt.retired || (rt.retired === 'replaced' && ops !== undefined && isDeliveryRecord(ops))) return;
    throw new LeaseLostError(`job ${rt.def.id} was replaced or removed`);
  };
}

/** Only the seen id and delivery of one accepted item: nothing of the tick's state or schedule. */
function isDeliveryRecord(ops: CommitOps): boolean {
  return ops.delivery !== undefined && Object.keys(ops).every((k) => k === 'addSeen' || k === 'delivery');
}

/** Resolves when no work of `jobs` is left (work started meanwhile included). */
export async function idle(jobs: () => Iterable<JobRuntime>): Promise<void> {
  while ([...jobs()].some((rt) => rt.pending > 0)) await waitFor(jobs());
}
