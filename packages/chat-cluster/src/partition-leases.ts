/**
 * The partition leases `inbound:<p>`, rows of the cluster's leader table (`cluster_leader`: holder, term,
 * expiry on the database clock), read and written for all partitions at once: one statement renews every
 * lease this daemon holds, one takes the free ones it wants, one reads who holds what. A lease is taken only
 * once expired (its term goes up) and renewed only by its holder while its term is unexpired, as leader terms.
 */
import { quoteSchema, type Queryable } from '@agent/pg';

const NAME_PREFIX = 'inbound:';

/** A lease this daemon holds: its partition and term (the fence). */
export interface PartitionLease {
  readonly partition: number;
  readonly term: number;
}

export interface PartitionLeases {
  /** Extends the given leases; returns those still this daemon's (the others are lost). */
  renew(held: readonly PartitionLease[]): Promise<PartitionLease[]>;
  /** Takes those of `partitions` that are free or expired; returns the ones taken. */
  acquire(partitions: readonly number[]): Promise<PartitionLease[]>;
  /** Ends the given leases at once, so the next holder need not wait for the TTL. */
  release(held: readonly PartitionLease[]): Promise<void>;
  /** Unexpired leases of every holder: partition → holder. */
  holders(): Promise<Map<number, string>>;
}

const nameOf = (p: number): string => `${NAME_PREFIX}${p}`;

const fromRows = (rows: { name: string; term: string | number }[]): PartitionLease[] =>
  rows
    .map((r) => ({ partition: Number(r.name.slice(NAME_PREFIX.length)), term: Number(r.term) }))
    .sort((a, b) => a.partition - b.partition);

/** Rows are always written in name order, so that two daemons taking overlapping sets cannot deadlock. */
const sorted = (held: readonly PartitionLease[]) =>
  held.map((l) => ({ name: nameOf(l.partition), term: l.term })).sort((a, b) => (a.name < b.name ? -1 : 1));

export function partitionLeases(o: {
  db: Queryable;
  schema: string;
  holderId: string;
  ttlMs: number;
}): PartitionLeases {
  const table = `${quoteSchema(o.schema)}.cluster_leader`;
  const ttlSecs = o.ttlMs / 1000;
  return {
    async renew(held) {
      if (held.length === 0) return [];
      const rows = sorted(held);
      const { rows: out } = await o.db.query<{ name: string; term: string }>(
        `UPDATE ${table} AS l SET expires_at = now() + make_interval(secs => $4)
           FROM unnest($1::text[], $2::bigint[]) AS m(name, term)
          WHERE l.name = m.name AND l.term = m.term AND l.holder = $3 AND l.expires_at > now()
          RETURNING l.name, l.term`,
        [rows.map((r) => r.name), rows.map((r) => r.term), o.holderId, ttlSecs],
      );
      return fromRows(out);
    },
    async acquire(partitions) {
      if (partitions.length === 0) return [];
      const names = partitions.map(nameOf).sort();
      const { rows } = await o.db.query<{ name: string; term: string }>(
        `INSERT INTO ${table} (name, holder, term, expires_at)
         SELECT name, $2, 1, now() + make_interval(secs => $3) FROM unnest($1::text[]) AS n(name)
         ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, term = cluster_leader.term + 1,
           expires_at = EXCLUDED.expires_at
         WHERE cluster_leader.expires_at <= now()
         RETURNING name, term`,
        [names, o.holderId, ttlSecs],
      );
      return fromRows(rows);
    },
    async release(held) {
      if (held.length === 0) return;
      const rows = sorted(held);
      await o.db.query(
        `UPDATE ${table} AS l SET expires_at = now()
           FROM unnest($1::text[], $2::bigint[]) AS m(name, term)
          WHERE l.name = m.name AND l.term = m.term AND l.holder = $3 AND l.expires_at > now()`,
        [rows.map((r) => r.name), rows.map((r) => r.term), o.holderId],
      );
    },
    async holders() {
      const { rows } = await o.db.query<{ name: string; holder: string }>(
        `SELECT name, holder FROM ${table} WHERE name LIKE '${NAME_PREFIX}%' AND expires_at > now()`,
      );
      return new Map(rows.map((r) => [Number(r.name.slice(NAME_PREFIX.length)), r.holder]));
    },
  };
}
