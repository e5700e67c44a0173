/**
 * The state store as the service uses it: a failed call (other than a lost lease) becomes a
 * `StateStoreError`, which the runner counts as a Transient error of the job. The store's own health is
 * kept here: the `poller_store_healthy` gauge, one error log when an outage starts and one summary when it
 * ends, not a line per tick.
 */
import type { Logger } from '@agent/log';
import type { PollerMetrics } from './metrics.js';
import type {
  DeliveryRecord,
  Fence,
  JobState,
  LeaseGrant,
  LeaseInfo,
  StartWrite,
  StateStore,
} from './store.js';
import { isLeaseLost, isStateStoreError, StateStoreError } from './errors.js';

/** For calls that never end an outage (their success does not show that a write went through). */
const never = () => false;
const always = () => true;

interface StoreHealth {
  /** A tick ended Transient because of the store (counted in the outage summary). */
  tickFailed(): void;
}

export interface WatchedStore {
  store: StateStore;
  health: StoreHealth;
}

export function watchStore(
  inner: StateStore,
  opts: { metrics: PollerMetrics; logger: Logger; monotonicNow: () => number },
): WatchedStore {
  const { metrics, logger } = opts;
  let healthy = true;
  let outage = { since: 0, errors: 0, ticksFailed: 0 };
  metrics.storeHealthy(true);

  const failed = (operation: string, err: unknown): unknown => {
    // A lost lease is the store working as meant; a store error raised below us keeps its operation.
    if (isLeaseLost(err) || isStateStoreError(err)) return err;
    const e = new StateStoreError(operation, err);
    metrics.storeError(operation);
    if (healthy) {
      healthy = false;
      outage = { since: opts.monotonicNow(), errors: 0, ticksFailed: 0 };
      metrics.storeHealthy(false);
      logger.error('poller state store failing: ticks count as transient errors until a write goes through', {
        operation,
        reason: e.message,
      });
    }
    outage.errors++;
    return e;
  };

  // Reads can work on a full disk: only a call that wrote ends an outage.
  const wrote = () => {
    if (healthy) return;
    healthy = true;
    metrics.storeHealthy(true);
    logger.warn('poller state store recovered', {
      outage_ms: Math.round(opts.monotonicNow() - outage.since),
      errors: outage.errors,
      ticks_failed: outage.ticksFailed,
    });
  };

  // One pair of handlers per store method, made once: the calls of every tick only add a `then`.
  const read = <R>(operation: string) => {
    const onError = (err: unknown): never => {
      throw failed(operation, err);
    };
    return (p: Promise<R>): Promise<R> => p.catch(onError);
  };
  /** `changed`: whether the answer shows that the call wrote (a refused lease wrote nothing). */
  const write = <R>(operation: string, changed: (r: R) => boolean = always) => {
    const onError = (err: unknown): never => {
      throw failed(operation, err);
    };
    const onDone = (r: R): R => {
      if (!healthy && changed(r)) wrote();
      return r;
    };
    return (p: Promise<R>): Promise<R> => p.then(onDone, onError);
  };

  const load = read<JobState | null>('load');
  const loadAll = read<JobState[]>('loadAll');
  // An existing row makes init write nothing.
  const init = write<JobState>('init', never);
  const commit = write<void>('commit');
  const commitStart = write<void>('commitStart');
  const seenAmong = read<Set<string>>('seenAmong');
  const seenCount = read<number>('seenCount');
  const deliveries = read<DeliveryRecord[]>('deliveries');
  const deleteJob = write<void>('deleteJob');
  const acquireLease = write<LeaseGrant | null>('acquireLease', (grant) => grant !== null);
  const renewLease = write<boolean>('renewLease', Boolean);
  const releaseLease = write<void>('releaseLease', never);
  const revokeLease = write<void>('revokeLease');
  const breakLease = write<boolean>('breakLease', Boolean);
  const getLease = read<LeaseInfo | null>('getLease');
  const holdsLease = read<boolean>('holdsLease');
  // Store methods are async: a failure arrives as a rejection, never as a synchronous throw.
  const store: StateStore = {
    load: (id) => load(inner.load(id)),
    loadAll: () => loadAll(inner.loadAll()),
    init: (id, initial) => init(inner.init(id, initial)),
    commit: (id, ops, fence) => commit(inner.commit(id, ops, fence)),
    seenAmong: (id, ids) => seenAmong(inner.seenAmong(id, ids)),
    seenCount: (id) => seenCount(inner.seenCount(id)),
    deliveries: (id, limit) => deliveries(inner.deliveries(id, limit)),
    deleteJob: (id) => deleteJob(inner.deleteJob(id)),
    acquireLease: (id, holder, ttl) => acquireLease(inner.acquireLease(id, holder, ttl)),
    renewLease: (id, fence, ttl) => renewLease(inner.renewLease(id, fence, ttl)),
    releaseLease: (id, fence) => releaseLease(inner.releaseLease(id, fence)),
    revokeLease: (id) => revokeLease(inner.revokeLease(id)),
    breakLease: (id, holder) => breakLease(inner.breakLease(id, holder)),
    getLease: (id) => getLease(inner.getLease(id)),
    ...(inner.commitStart
      ? { commitStart: (writes: readonly StartWrite[]) => commitStart(inner.commitStart!(writes)) }
      : {}),
    ...(inner.holdsLease
      ? { holdsLease: (id: string, fence: Fence) => holdsLease(inner.holdsLease!(id, fence)) }
      : {}),
    close: () => inner.close(),
  };
  return {
    store,
    health: {
      tickFailed() {
        if (!healthy) outage.ticksFailed++;
      },
    },
  };
}
