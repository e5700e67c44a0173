/** The SQLite store's write transactions: each is one short IMMEDIATE transaction, fenced where it must be. */
import type Database from 'better-sqlite3';
import { LeaseLostError } from './errors.js';
import { COLUMNS, fromRow, toDb, type Queries, type Row } from './sqlite-schema.js';
import {
  DELIVERY_LOG_LIMIT,
  type CommitOps,
  type Fence,
  type JobStatePatch,
  type LeaseGrant,
} from './store.js';

/** Writes a state patch: one prepared UPDATE per set of patched columns (a handful of shapes: tick end, failure, pause, ...). */
function statePatcher(db: Database.Database, q: Queries): Transactions['patchState'] {
  const updates = new Map<string, Database.Statement>();
  return (jobId: string, patch: JobStatePatch) => {
    const cols: string[] = [];
    const values: unknown[] = [];
    for (const [key, col] of COLUMNS)
      if (Object.hasOwn(patch, key)) {
        cols.push(col);
        values.push(toDb(key, patch[key]));
      }
    if (cols.length === 0) {
      q.insert.run(jobId);
      return;
    }
    const shape = cols.join(',');
    let update = updates.get(shape);
    if (!update) {
      update = db.prepare(`UPDATE poll_state SET ${cols.map((c) => `${c} = ?`).join(', ')} WHERE job_id = ?`);
      updates.set(shape, update);
    }
    values.push(jobId);
    // The row nearly always exists: insert only when the update found none.
    if (update.run(values).changes === 0) {
      q.insert.run(jobId);
      update.run(values);
    }
  };
}

export interface Transactions {
  patchState(jobId: string, patch: JobStatePatch): void;
  commitTx: Database.Transaction<(jobId: string, ops: CommitOps, fence: Fence | null | undefined) => void>;
  acquireTx: Database.Transaction<(jobId: string, holder: string, ttlMs: number) => LeaseGrant | null>;
  revokeTx: Database.Transaction<(jobId: string) => void>;
  breakTx: Database.Transaction<(jobId: string, holder: string) => boolean>;
  deleteTx: Database.Transaction<(jobId: string) => void>;
}

export function createTransactions(db: Database.Database, q: Queries, now: () => number): Transactions {
  const checkFence = (jobId: string, fence: Fence | null | undefined) => {
    if (!fence) return;
    const l = q.lease.get(jobId) as { holder: string | null; epoch: number } | undefined;
    if (!l || l.holder !== fence.holder || l.epoch !== fence.epoch) throw new LeaseLostError();
  };
  const patchState = statePatcher(db, q);
  const revoke = (jobId: string) => {
    const t = now();
    const l = q.lease.get(jobId) as { epoch: number } | undefined;
    q.upsertLease.run({ job: jobId, holder: null, epoch: (l?.epoch ?? 0) + 1, now: t, expires: t });
  };

  const commitTx = db.transaction((jobId: string, ops: CommitOps, fence: Fence | null | undefined) => {
    // A releasing write checks its fence by the fenced release itself (one statement, not two); a lost
    // lease throws before anything is written, so the whole transaction rolls back either way.
    if (ops.releaseLease && fence) {
      if (q.release.run(now(), jobId, fence.holder, fence.epoch).changes !== 1) throw new LeaseLostError();
    } else checkFence(jobId, fence);
    if (ops.state) patchState(jobId, ops.state);
    if (ops.clearSeen) {
      q.clearSeen.run(jobId);
      q.clearDelivery.run(jobId);
    }
    if (ops.addSeen?.length) {
      let ord = (q.maxOrd.get(jobId) as { m: number }).m;
      const t = now();
      for (const id of ops.addSeen) q.addSeen.run(jobId, id, t, ++ord);
    }
    // Evicts when the commit adds ids or names the ids to keep (the runner's last write of a tick).
    if (ops.seenLimit !== undefined && (ops.addSeen?.length || ops.keepSeen !== undefined)) {
      const n = (q.countSeen.get(jobId) as { n: number }).n - ops.seenLimit;
      if (n > 0) q.evict.run({ job: jobId, keep: JSON.stringify(ops.keepSeen ?? []), n });
    }
    if (ops.delivery) {
      const d = ops.delivery;
      q.addDelivery.run(jobId, d.itemId, d.channel, d.to, d.at);
      q.trimDelivery.run(jobId, jobId, DELIVERY_LOG_LIMIT);
    }
    if (ops.revokeLease) revoke(jobId);
  });

  const acquireTx = db.transaction((jobId: string, holder: string, ttlMs: number): LeaseGrant | null => {
    const t = now();
    const l = q.lease.get(jobId) as { holder: string | null; epoch: number; expires_at: number } | undefined;
    if (l && l.holder !== null && l.holder !== holder && l.expires_at > t) return null;
    const epoch = (l?.epoch ?? 0) + 1;
    const expiresAt = t + ttlMs;
    q.upsertLease.run({ job: jobId, holder, epoch, now: t, expires: expiresAt });
    const row = q.load.get(jobId) as Row | undefined;
    return {
      holder,
      epoch,
      expiresAt,
      takeover: !!l && l.holder !== null && l.holder !== holder,
      previousHolder: l?.holder ?? null,
      state: row ? fromRow(row) : null,
    };
  });

  const revokeTx = db.transaction((jobId: string) => revoke(jobId));

  const breakTx = db.transaction((jobId: string, holder: string): boolean => {
    const l = q.lease.get(jobId) as { holder: string | null; epoch: number } | undefined;
    if (!l || l.holder !== holder) return false;
    const t = now();
    q.upsertLease.run({ job: jobId, holder: null, epoch: l.epoch + 1, now: t, expires: t });
    return true;
  });

  const deleteTx = db.transaction((jobId: string) => {
    db.prepare('DELETE FROM poll_state WHERE job_id = ?').run(jobId);
    q.clearSeen.run(jobId);
    q.clearDelivery.run(jobId);
    db.prepare('DELETE FROM poll_lease WHERE job_id = ?').run(jobId);
  });

  return { patchState, commitTx, acquireTx, revokeTx, breakTx, deleteTx };
}
