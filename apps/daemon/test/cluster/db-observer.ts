// The harness's own view of the database during a fault run: every lease grant and how it ended, and the
// database time and lease check of every delivery row (recorded by triggers in a schema of their own, in the
// transaction that made the change, so a rolled-back claim leaves no trace), and the delivery audit
// `poll_delivery` read while the run goes on, so that its per-job trimming cannot hide a row. The observer connects straight to the server, never through a fault proxy.
import { createPool, quoteSchema, type Pool } from '@agent/pg';
import { createPostgresStateStore } from '@agent/poller-runtime/postgres';
import { sleep } from '@agent/timers';
import { IDLE_IN_TRANSACTION_MS } from './checks-control.js';
import type { MemoryRow } from './chat-history.js';
import { auditFromRows, type DeliveryAudit, type EndState, type LeaseGrant } from './history.js';

/**
 * The triggers: a grant is a new epoch with a holder, and an epoch ends when its holder or number changes;
 * each delivery row written gets the database time of its transaction and whether its epoch held the lease.
 */
const auditSql = (audit: string, jobTable: string, deliveryTable: string): string => `
  CREATE SCHEMA ${audit};
  CREATE TABLE ${audit}.lease_grant (
    job_id text NOT NULL,
    holder text NOT NULL,
    epoch bigint NOT NULL,
    granted_at timestamptz NOT NULL,
    due_at timestamptz,
    slot_at timestamptz,
    ran_before timestamptz,
    ended_at timestamptz,
    ended_how text,
    last_status text,
    last_run_at timestamptz,
    next_run_at timestamptz,
    PRIMARY KEY (job_id, epoch)
  );
  CREATE FUNCTION ${audit}.on_job_update() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF OLD.lease_holder IS NOT NULL
       AND (NEW.lease_holder IS DISTINCT FROM OLD.lease_holder OR NEW.lease_epoch <> OLD.lease_epoch) THEN
      UPDATE ${audit}.lease_grant SET ended_at = now(),
        ended_how = CASE WHEN NEW.lease_epoch = OLD.lease_epoch THEN 'released'
                         WHEN NEW.lease_holder IS NOT NULL THEN 'reclaimed'
                         WHEN NEW.lease_broken_from IS NOT NULL THEN 'broken'
                         ELSE 'revoked' END,
        last_status = NEW.last_status, last_run_at = NEW.last_run_at, next_run_at = NEW.next_run_at
      WHERE job_id = OLD.job_id AND epoch = OLD.lease_epoch;
    END IF;
    IF NEW.lease_holder IS NOT NULL AND NEW.lease_epoch <> OLD.lease_epoch THEN
      INSERT INTO ${audit}.lease_grant (job_id, holder, epoch, granted_at, due_at, slot_at, ran_before)
      VALUES (NEW.job_id, NEW.lease_holder, NEW.lease_epoch, now(), OLD.due_at, OLD.nominal_at, OLD.last_run_at);
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER fault_audit_lease AFTER UPDATE ON ${jobTable}
    FOR EACH ROW EXECUTE FUNCTION ${audit}.on_job_update();
  CREATE TABLE ${audit}.delivery_write (
    seq bigint PRIMARY KEY,
    written_at timestamptz NOT NULL,
    lease_held boolean NOT NULL
  );
  CREATE FUNCTION ${audit}.on_delivery_insert() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO ${audit}.delivery_write (seq, written_at, lease_held) VALUES (NEW.seq, now(), EXISTS (
      SELECT 1 FROM ${jobTable} j
      WHERE j.job_id = NEW.job_id AND j.lease_holder = NEW.holder AND j.lease_epoch = NEW.lease_epoch));
    RETURN NULL;
  END $$;
  CREATE TRIGGER fault_audit_delivery AFTER INSERT ON ${deliveryTable}
    FOR EACH ROW EXECUTE FUNCTION ${audit}.on_delivery_insert();
`;

const ms = (v: unknown): number | undefined => (v instanceof Date ? v.getTime() : undefined);

/** A `lease_grant` row as the checker reads it. */
function grantOfRow(r: Record<string, unknown>): LeaseGrant {
  const g: LeaseGrant = {
    jobId: String(r['job_id']),
    holder: String(r['holder']),
    epoch: Number(r['epoch']),
    grantedAt: ms(r['granted_at'])!,
    dueAt: ms(r['due_at']) ?? ms(r['granted_at'])!,
  };
  const ended = ms(r['ended_at']);
  const how = r['ended_how'] as LeaseGrant['endedHow'] | null;
  if (ended !== undefined && how) {
    g.endedAt = ended;
    g.endedHow = how;
    if (how === 'released') g.releasedAt = ended;
  }
  const slot = ms(r['slot_at']);
  if (slot !== undefined) g.slotAt = slot;
  // A tick ran under this grant when it moved `last_run_at`; then its outcome and next run are known.
  const ranAt = ms(r['last_run_at']);
  if (how === 'released' && ranAt !== undefined && ranAt !== ms(r['ran_before'])) {
    g.ran = { status: String(r['last_status']) };
    const next = ms(r['next_run_at']);
    if (next !== undefined) g.ran.nextRunAt = next;
  }
  return g;
}

/** Audit rows read so far, by seq; a hole below the highest seq is read again until `holeGraceMs` passed. */
class AuditReader {
  private readonly rows = new Map<number, DeliveryAudit>();
  /** Every seq at or below it is read or given up (a rolled-back insert leaves a hole for good). */
  private floor = 0;
  private top = 0;
  private readonly holes = new Map<number, number>();

  constructor(private readonly holeGraceMs: number) {}

  get after(): number {
    return this.floor;
  }

  add(batch: readonly DeliveryAudit[], now: number): void {
    for (const a of batch) {
      this.rows.set(a.seq, a);
      this.top = Math.max(this.top, a.seq);
    }
    let next = this.floor;
    for (let s = this.floor + 1; s <= this.top; s++) {
      if (this.rows.has(s)) {
        if (next === s - 1) next = s;
        continue;
      }
      const seen = this.holes.get(s) ?? now;
      this.holes.set(s, seen);
      if (next === s - 1 && now - seen >= this.holeGraceMs) {
        this.holes.delete(s);
        next = s;
      }
    }
    this.floor = next;
  }

  all(): DeliveryAudit[] {
    return [...this.rows.values()].sort((a, b) => a.seq - b.seq);
  }
}

export interface DbObserver {
  readonly pool: Pool;
  /** Delivery audit rows read so far. */
  audit(): DeliveryAudit[];
  /** Every lease grant the trigger recorded. */
  grants(): Promise<LeaseGrant[]>;
  /** Jobs whose first tick recorded its baseline. */
  baselined(): Promise<number>;
  /** The config version a daemon reports it runs (`cluster_member`), or null. */
  appliedVersion(daemonId: string): Promise<number | null>;
  /** Leases held at the end and sessions idle in a transaction, for the end-of-run hygiene check. */
  endState(): Promise<EndState>;
  /** Conversation memory (`memory_message`) by id; empty when no daemon created the table. */
  memoryRows(): Promise<MemoryRow[]>;
  /** Reads the audit once more and stops reading. */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Migrates the job table (as a daemon would at its start), installs the grant trigger on it, and reads the
 * delivery audit every `everyMs` until stopped. Call before any daemon starts.
 */
export async function startDbObserver(o: {
  url: string;
  schema: string;
  everyMs?: number;
  staleAfterMs: number;
}): Promise<DbObserver> {
  const pool = createPool({ url: o.url, applicationName: 'fault harness observer', max: 2 });
  pool.on('error', () => {});
  const schema = quoteSchema(o.schema);
  // The triggers' own schema, beside the product's: `<schema>_fault_audit`.
  const audit = quoteSchema(`${o.schema}_fault_audit`);
  await createPostgresStateStore({ pool, schema: o.schema });
  await pool.query(auditSql(audit, `${schema}.poll_job`, `${schema}.poll_delivery`));
  const reader = new AuditReader(10_000);
  const readOnce = async (): Promise<void> => {
    const { rows } = await pool.query(
      `SELECT d.seq, d.job_id, d.item_id, d.lease_epoch, d.holder, d.delivered_at, w.written_at, w.lease_held
       FROM ${schema}.poll_delivery d LEFT JOIN ${audit}.delivery_write w USING (seq)
       WHERE d.seq > $1 ORDER BY d.seq LIMIT 10000`,
      [reader.after],
    );
    reader.add(auditFromRows(rows as Record<string, unknown>[]), Date.now());
  };
  const stop = new AbortController();
  const loop = (async () => {
    // A failed read (the server restarting) is retried at the next round.
    do await readOnce().catch(() => {});
    while (await sleep(o.everyMs ?? 250, stop.signal));
  })();
  return {
    pool,
    audit: () => reader.all(),
    async grants() {
      const { rows } = await pool.query(`SELECT * FROM ${audit}.lease_grant ORDER BY granted_at, epoch`);
      return (rows as Record<string, unknown>[]).map(grantOfRow);
    },
    async baselined() {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.poll_job WHERE baselined`);
      return (rows[0] as { n: number }).n;
    },
    async appliedVersion(daemonId) {
      const { rows } = await pool.query(
        `SELECT applied_config_version AS v FROM ${schema}.cluster_member WHERE daemon_id = $1`,
        [daemonId],
      );
      const v = (rows[0] as { v: number | null } | undefined)?.v;
      return v === undefined || v === null ? null : Number(v);
    },
    async memoryRows() {
      const { rows } = await pool
        .query(`SELECT id, session_key, role, content FROM ${schema}.memory_message ORDER BY id`)
        .catch((err: unknown) => {
          if ((err as { code?: string }).code === '42P01') return { rows: [] }; // undefined_table
          throw err;
        });
      return (rows as { id: string | number; session_key: string; role: string; content: string }[]).map(
        (r) => ({ id: Number(r.id), sessionKey: r.session_key, role: r.role, content: r.content }),
      );
    },
    async endState() {
      const { rows: orphans } = await pool.query(
        `SELECT j.job_id, j.lease_holder FROM ${schema}.poll_job j
         WHERE j.lease_holder IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM ${schema}.cluster_member m
           WHERE j.lease_holder = m.daemon_id || '#' || m.incarnation AND m.left_at IS NULL
             AND m.seen_at >= now() - make_interval(secs => $1 / 1000.0))
         ORDER BY j.job_id`,
        [o.staleAfterMs],
      );
      const { rows: idle } = await pool.query(
        `SELECT application_name AS app, state,
                (extract(epoch FROM now() - state_change) * 1000)::int AS for_ms, query
         FROM pg_stat_activity
         WHERE state LIKE 'idle in transaction%' AND datname = current_database()
           AND now() - state_change > $1 * interval '1 millisecond'`,
        [IDLE_IN_TRANSACTION_MS],
      );
      return {
        orphanLeases: (orphans as { job_id: string; lease_holder: string }[]).map((r) => ({
          jobId: r.job_id,
          holder: r.lease_holder,
        })),
        idleInTransaction: (idle as { app: string; state: string; for_ms: number; query: string }[]).map(
          (r) =>
            `${r.app} ${r.state} for ${r.for_ms} ms after: ${r.query.replace(/\s+/g, ' ').slice(0, 120)}`,
        ),
      };
    },
    async stop() {
      stop.abort();
      await loop;
      await readOnce();
    },
    close: () => pool.end(),
  };
}
