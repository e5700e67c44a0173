/** In-memory `StateStore` with the same semantics as the SQLite one (tests, `./testing`). */
import { type JsonValue } from '@agent/poller-core';
import {
  DELIVERY_LOG_LIMIT,
  emptyJobState,
  type CommitOps,
  type DeliveryRecord,
  type Fence,
  type JobState,
  type JobStatePatch,
  type LeaseGrant,
  type LeaseInfo,
  type StateStore,
} from './store.js';
import { LeaseLostError } from './errors.js';

export interface MemoryStateStoreOptions {
  /** Clock for lease expiry; default `Date.now`. */
  now?: () => number;
}

export interface MemoryStateStore extends StateStore {
  /** Seen ids of a job, oldest first. */
  seenIds(jobId: string): string[];
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** Drops the oldest seen ids beyond `limit`, never one of `keep`. */
function trimSeen(set: Map<string, number>, limit: number, keep: readonly string[]): void {
  if (set.size <= limit) return;
  const kept = new Set(keep);
  let excess = set.size - limit;
  for (const [id] of [...set.entries()].sort((a, b) => a[1] - b[1])) {
    if (excess <= 0) break;
    if (kept.has(id)) continue;
    set.delete(id);
    excess--;
  }
}

type LeaseMethods = Pick<
  StateStore,
  'acquireLease' | 'renewLease' | 'releaseLease' | 'revokeLease' | 'breakLease' | 'holdsLease' | 'getLease'
>;

/** The leases of the memory store, with the epoch fencing of the SQLite one. */
function memoryLeases(now: () => number) {
  const leases = new Map<string, LeaseInfo>();
  const holds = (jobId: string, fence: Fence): boolean => {
    const l = leases.get(jobId);
    return !!l && l.holder === fence.holder && l.epoch === fence.epoch;
  };
  const release = (jobId: string, fence: Fence) => {
    if (holds(jobId, fence))
      leases.set(jobId, { holder: null, epoch: leases.get(jobId)!.epoch, expiresAt: now() });
  };
  const methods: LeaseMethods = {
    async acquireLease(jobId, holder, ttlMs): Promise<LeaseGrant | null> {
      const t = now();
      const l = leases.get(jobId);
      if (l && l.holder !== null && l.holder !== holder && l.expiresAt > t) return null;
      const takeover = !!l && l.holder !== null && l.holder !== holder;
      const grant: LeaseInfo = { holder, epoch: (l?.epoch ?? 0) + 1, expiresAt: t + ttlMs };
      leases.set(jobId, grant);
      return { ...grant, holder, takeover, previousHolder: l?.holder ?? null };
    },
    async renewLease(jobId, fence, ttlMs) {
      if (!holds(jobId, fence)) return false;
      leases.get(jobId)!.expiresAt = now() + ttlMs;
      return true;
    },
    async releaseLease(jobId, fence) {
      release(jobId, fence);
    },
    async revokeLease(jobId) {
      const l = leases.get(jobId);
      leases.set(jobId, { holder: null, epoch: (l?.epoch ?? 0) + 1, expiresAt: now() });
    },
    async breakLease(jobId, holder) {
      const l = leases.get(jobId);
      if (!l || l.holder !== holder) return false;
      leases.set(jobId, { holder: null, epoch: l.epoch + 1, expiresAt: now() });
      return true;
    },
    async holdsLease(jobId, fence) {
      return holds(jobId, fence);
    },
    async getLease(jobId) {
      const l = leases.get(jobId);
      return l ? { ...l } : null;
    },
  };
  return {
    methods,
    release,
    /** Throws `LeaseLostError` unless `fence` (when given) still holds the job. */
    checkFence(jobId: string, fence: Fence | null | undefined) {
      if (fence && !holds(jobId, fence)) throw new LeaseLostError();
    },
    forget: (jobId: string) => leases.delete(jobId),
  };
}

export function createMemoryStateStore(options: MemoryStateStoreOptions = {}): MemoryStateStore {
  const now = options.now ?? Date.now;
  const states = new Map<string, JobState>();
  const seen = new Map<string, Map<string, number>>();
  const deliveries = new Map<string, DeliveryRecord[]>();
  const leases = memoryLeases(now);
  let seq = 0;

  const store: MemoryStateStore = {
    ...leases.methods,
    async load(jobId) {
      const s = states.get(jobId);
      return s ? clone(s) : null;
    },
    async loadAll() {
      return [...states.values()].map(clone).sort((a, b) => (a.jobId < b.jobId ? -1 : 1));
    },
    async init(jobId, initial: JobStatePatch = {}) {
      if (!states.has(jobId)) states.set(jobId, { ...emptyJobState(jobId), ...clone(initial) });
      return clone(states.get(jobId)!);
    },
    async commit(jobId, ops: CommitOps, fence) {
      leases.checkFence(jobId, fence);
      const cur = states.get(jobId) ?? emptyJobState(jobId);
      const next = { ...cur, ...clone(ops.state ?? {}) } as JobState;
      if (ops.state && 'cursor' in ops.state) next.cursor = clone(ops.state.cursor as JsonValue | null);
      const set = ops.clearSeen ? new Map<string, number>() : (seen.get(jobId) ?? new Map<string, number>());
      for (const id of ops.addSeen ?? []) if (!set.has(id)) set.set(id, ++seq);
      if (ops.seenLimit !== undefined) trimSeen(set, ops.seenLimit, ops.keepSeen ?? []);
      states.set(jobId, next);
      seen.set(jobId, set);
      if (ops.clearSeen) deliveries.delete(jobId);
      if (ops.delivery) {
        const list = deliveries.get(jobId) ?? [];
        list.push({ ...ops.delivery });
        if (list.length > DELIVERY_LOG_LIMIT) list.splice(0, list.length - DELIVERY_LOG_LIMIT);
        deliveries.set(jobId, list);
      }
      if (ops.releaseLease && fence) leases.release(jobId, fence);
      if (ops.revokeLease) await leases.methods.revokeLease(jobId);
    },
    async commitStart(writes) {
      for (const w of writes) {
        await store.init(w.jobId, w.initial);
        await store.commit(w.jobId, w.ops, null);
      }
    },
    async seenAmong(jobId, ids) {
      const set = seen.get(jobId);
      return new Set(ids.filter((id) => set?.has(id)));
    },
    async seenCount(jobId) {
      return seen.get(jobId)?.size ?? 0;
    },
    async deliveries(jobId, limit = DELIVERY_LOG_LIMIT) {
      return (deliveries.get(jobId) ?? []).slice(-limit).map((d) => ({ ...d }));
    },
    async deleteJob(jobId) {
      states.delete(jobId);
      seen.delete(jobId);
      deliveries.delete(jobId);
      leases.forget(jobId);
    },
    async close() {},
    seenIds(jobId) {
      return [...(seen.get(jobId) ?? new Map<string, number>()).entries()]
        .sort((a, b) => a[1] - b[1])
        .map(([id]) => id);
    },
  };
  return store;
}
