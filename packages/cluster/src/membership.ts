/**
 * Membership: this daemon's heartbeat row, the live members, and the local trust window. Other daemons
 * treat a member not seen for `staleAfterMs` (database clock) as dead and take its leases; so this daemon
 * stops trusting itself (aborts its ticks, stops sending) once its last completed heartbeat STARTED more
 * than `staleAfterMs - trustMarginMs` ago on its own monotonic clock, before anyone may take over.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { quoteSchema, type Pool } from '@agent/pg';
import { ClusterError } from './errors.js';
import { deadline, Listeners, monotonicMs, repeat, type Repeater } from './loop.js';
import {
  beatRow,
  holderIdOf,
  joinRow,
  leaveRow,
  readMembers,
  setAppliedRow,
  type Member,
} from './members.js';

export interface MembershipOptions {
  pool: Pool;
  /** Schema of the cluster tables (migrated with `migrateCluster`). */
  schema: string;
  daemonId: string;
  /** The daemon's release, shown in `agent cluster status`. */
  version: string;
  intervalMs: number;
  staleAfterMs: number;
  /** Trust ends this long before others may declare us dead. Default: a fifth of the window, at least 1 s. */
  trustMarginMs?: number;
  host?: string;
  pid?: number;
  /** Ticks running now; written with every heartbeat. */
  ticksInFlight?: () => number;
  /** A heartbeat or a report failed (the membership keeps beating). */
  onError?: (err: Error) => void;
}

/** Members that stopped heartbeating: their leases may be broken (`holderId`). */
export type StaleMembers = readonly Member[];

export interface Membership {
  readonly daemonId: string;
  /** New at every start of the process: `<pid>.<random>`. */
  readonly incarnation: string;
  /** `<daemon_id>#<incarnation>`: the holder id of this daemon's leases. */
  readonly holderId: string;
  /**
   * After `start`: the holder id of the previous incarnation of this daemon id, whose row this start took
   * over (it crashed, or stopped), or null. The others never see that incarnation go stale (the row now
   * shows this one), so breaking the leases it may still hold falls to this daemon.
   */
  readonly replacedHolderId: string | null;
  /** Joins (first heartbeat) and starts beating. Throws CLUSTER_DUPLICATE_ID or the database's error. */
  start(): Promise<void>;
  /** Stops beating and marks the row as left, so nobody waits out the window for us. */
  stop(): Promise<void>;
  /** Beats once now (also what the timer does). */
  heartbeat(): Promise<void>;
  /** False from the end of the trust window until a heartbeat goes through again. */
  trusted(): boolean;
  /** `false`: abort the ticks and stop sending; `true`: trusted again. */
  onTrustChange(listener: (trusted: boolean) => void): () => void;
  /** After each heartbeat that found stale members (ours excluded). */
  onStaleMembers(listener: (members: StaleMembers) => void): () => void;
  /** After each heartbeat whose desired config version is not the applied one (`setApplied`). */
  onDesiredVersion(listener: (desired: number) => void): () => void;
  /** Records the config version and hash this daemon runs (shown to others, compared by reload). */
  setApplied(version: number, hash: string): Promise<void>;
  /** Members seen within the window, this one included once it has joined. */
  liveMembers(): Promise<Member[]>;
  /** Every row: live, stale and left members. */
  members(): Promise<Member[]>;
}

export function createMembership(o: MembershipOptions): Membership {
  const schema = quoteSchema(o.schema);
  const incarnation = `${o.pid ?? process.pid}.${randomBytes(4).toString('hex')}`;
  const holderId = holderIdOf(o.daemonId, incarnation);
  const margin = o.trustMarginMs ?? Math.max(1000, Math.round(o.staleAfterMs / 5));
  const trust = new Listeners<boolean>();
  const stale = new Listeners<StaleMembers>();
  const desired = new Listeners<number>();
  let isTrusted = false;
  let applied = 0;
  let replaced: string | null = null;
  let loop: Repeater | undefined;
  const report = (err: unknown) => o.onError?.(err instanceof Error ? err : new Error(String(err)));
  const setTrusted = (value: boolean): void => {
    if (value === isTrusted) return;
    isTrusted = value;
    trust.emit(value);
  };
  const window = deadline(o.staleAfterMs - margin, () => setTrusted(false));

  const beat = async (): Promise<void> => {
    const startedAt = monotonicMs();
    try {
      const row = await beatRow(o.pool, schema, o.daemonId, incarnation, o.ticksInFlight?.() ?? 0);
      if (!row) throw new Error(`membership row of ${o.daemonId} is no longer ours (${holderId})`);
      window.extend(startedAt);
      if (window.valid()) setTrusted(true);
      if (row.desiredConfigVersion !== 0 && row.desiredConfigVersion !== applied)
        desired.emit(row.desiredConfigVersion);
      const found = (await readMembers(o.pool, schema, o.staleAfterMs)).filter(
        (m) => m.state === 'stale' && m.daemonId !== o.daemonId,
      );
      if (found.length > 0) stale.emit(found);
    } catch (err) {
      report(err);
    }
  };

  return {
    daemonId: o.daemonId,
    incarnation,
    holderId,
    get replacedHolderId() {
      return replaced;
    },
    async start() {
      const startedAt = monotonicMs();
      const joined = await joinRow(o.pool, schema, {
        daemonId: o.daemonId,
        incarnation,
        host: o.host ?? hostname(),
        pid: o.pid ?? process.pid,
        version: o.version,
        staleAfterMs: o.staleAfterMs,
      });
      if (!joined.joined)
        throw new ClusterError(
          'CLUSTER_DUPLICATE_ID',
          `another live daemon uses daemon_id "${o.daemonId}"; give each host its own daemon_id in cluster.yaml`,
        );
      replaced = joined.previous === null ? null : holderIdOf(o.daemonId, joined.previous);
      window.extend(startedAt);
      setTrusted(window.valid());
      loop = repeat(o.intervalMs, beat);
    },
    async stop() {
      await loop?.stop();
      loop = undefined;
      window.cancel();
      setTrusted(false);
      await leaveRow(o.pool, schema, o.daemonId, incarnation).catch(report);
    },
    heartbeat() {
      if (!loop) return Promise.reject(new ClusterError('CLUSTER_NOT_STARTED', 'membership not started'));
      return loop.runNow();
    },
    trusted: () => isTrusted && window.valid(),
    onTrustChange: (l) => trust.on(l),
    onStaleMembers: (l) => stale.on(l),
    onDesiredVersion: (l) => desired.on(l),
    async setApplied(version, hash) {
      await setAppliedRow(o.pool, schema, o.daemonId, incarnation, version, hash);
      applied = version;
    },
    async liveMembers() {
      return (await readMembers(o.pool, schema, o.staleAfterMs)).filter((m) => m.state === 'live');
    },
    members: () => readMembers(o.pool, schema, o.staleAfterMs),
  };
}
