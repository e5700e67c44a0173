/**
 * Leader election, River-style: one row per name holds the holder, a term and an expiry on the database
 * clock. A candidate takes the row only once it expired (the term goes up); the holder renews only while the
 * term is still its own and unexpired. Locally, leadership ends at the renewal's start plus the TTL minus a
 * margin on the monotonic clock, so this daemon stops acting as leader before another may take over.
 */
import { quoteSchema, type Pool } from '@agent/pg';
import { deadline, Listeners, monotonicMs, repeat, type Repeater } from './loop.js';

export interface LeaderOptions {
  pool: Pool;
  schema: string;
  /** What is led, e.g. `metrics`. */
  name: string;
  /** This daemon's holder id (`Membership.holderId`). */
  holderId: string;
  /** How long a term lasts without renewal (the failover time). */
  ttlMs: number;
  /** How often to renew or try to take over; default a third of the TTL. */
  intervalMs?: number;
  /** Default: a fifth of the TTL, at least 500 ms. */
  marginMs?: number;
  onError?: (err: Error) => void;
}

export interface LeaderInfo {
  readonly holderId: string;
  /** The daemon id part of the holder id. */
  readonly daemonId: string;
  readonly term: number;
  readonly expiresInMs: number;
}

export interface LeaderElection {
  start(): Promise<void>;
  /** Stops campaigning and gives the term up at once (the next candidate need not wait for the TTL). */
  stop(): Promise<void>;
  isLeader(): boolean;
  /** The term this daemon holds, 0 when it is not the leader. */
  term(): number;
  onChange(listener: (isLeader: boolean) => void): () => void;
  /** Runs one round now (renew or try to take over). */
  campaign(): Promise<void>;
}

export function createLeaderElection(o: LeaderOptions): LeaderElection {
  const schema = quoteSchema(o.schema);
  const ttlSecs = o.ttlMs / 1000;
  const margin = o.marginMs ?? Math.max(500, Math.round(o.ttlMs / 5));
  const changes = new Listeners<boolean>();
  let term = 0;
  let loop: Repeater | undefined;
  const setTerm = (next: number): void => {
    const was = term !== 0;
    term = next;
    if (was !== (next !== 0)) changes.emit(next !== 0);
  };
  const window = deadline(o.ttlMs - margin, () => setTerm(0));

  const round = async (): Promise<void> => {
    const startedAt = monotonicMs();
    try {
      const { rows } =
        term !== 0
          ? await o.pool.query<{ term: number }>(
              `UPDATE ${schema}.cluster_leader SET expires_at = now() + make_interval(secs => $4)
                WHERE name = $1 AND holder = $2 AND term = $3 AND expires_at > now() RETURNING term`,
              [o.name, o.holderId, term, ttlSecs],
            )
          : await o.pool.query<{ term: number }>(
              `INSERT INTO ${schema}.cluster_leader (name, holder, term, expires_at)
               VALUES ($1, $2, 1, now() + make_interval(secs => $3))
               ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder,
                 term = cluster_leader.term + 1, expires_at = EXCLUDED.expires_at
               WHERE cluster_leader.expires_at <= now() RETURNING term`,
              [o.name, o.holderId, ttlSecs],
            );
      const won = rows[0]?.term ?? 0;
      if (won !== 0) window.extend(startedAt);
      setTerm(won !== 0 && window.valid() ? won : 0);
    } catch (err) {
      o.onError?.(err instanceof Error ? err : new Error(String(err)));
    }
  };

  return {
    async start() {
      await round();
      loop ??= repeat(o.intervalMs ?? Math.max(100, Math.round(o.ttlMs / 3)), round);
    },
    async stop() {
      await loop?.stop();
      loop = undefined;
      const held = term;
      window.cancel();
      setTerm(0);
      if (held === 0) return;
      await o.pool
        .query(
          `UPDATE ${schema}.cluster_leader SET expires_at = now()
            WHERE name = $1 AND holder = $2 AND term = $3`,
          [o.name, o.holderId, held],
        )
        .catch((err: Error) => o.onError?.(err));
    },
    isLeader: () => term !== 0 && window.valid(),
    term: () => (window.valid() ? term : 0),
    onChange: (l) => changes.on(l),
    campaign: () => (loop ? loop.runNow() : round()),
  };
}

/** The current leader of `name`, null when nobody holds an unexpired term. */
export async function readLeader(pool: Pool, schemaName: string, name: string): Promise<LeaderInfo | null> {
  const { rows } = await pool.query<{ holder: string; term: number; expires_in_ms: number }>(
    `SELECT holder, term, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in_ms
       FROM ${quoteSchema(schemaName)}.cluster_leader WHERE name = $1 AND expires_at > now()`,
    [name],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    holderId: row.holder,
    daemonId: row.holder.split('#')[0] ?? row.holder,
    term: row.term,
    expiresInMs: Math.round(row.expires_in_ms),
  };
}
