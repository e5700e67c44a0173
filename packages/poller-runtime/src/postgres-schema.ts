/** The PostgreSQL job table: its migrations (component `pollers`) and row mapping. */
import type { Migration } from '@agent/pg';
import type { BreakerState, JobState, JobStatePatch, TickStatus } from './store.js';

export const PG_COMPONENT = 'pollers';

export const PG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'job table, seen set, delivery log, fence sequence, reconcile marker',
    sql: `
      -- Every fencing token of every lease: never reused, also after a job is deleted.
      CREATE SEQUENCE {schema}.poll_fence_seq;
      CREATE TABLE {schema}.poll_job (
        job_id text PRIMARY KEY,
        def_hash text,
        config_version bigint NOT NULL DEFAULT 0,
        paused_on_boot boolean NOT NULL DEFAULT false,
        source_key text,
        paused boolean NOT NULL DEFAULT false,
        schedule_key text,
        nominal_at timestamptz,
        next_run_at timestamptz,
        at_fired text,
        -- Claimable at: next_run_at while free, the lease expiry while held, NULL while paused (trigger).
        due_at timestamptz,
        lease_holder text,
        lease_epoch bigint NOT NULL DEFAULT 0,
        lease_acquired_at timestamptz,
        lease_expires_at timestamptz,
        -- The holder whose lease was broken (known dead): the next claim is a takeover.
        lease_broken_from text,
        lease_ttl_ms bigint NOT NULL DEFAULT 30000,
        cursor jsonb,
        cursor_version bigint NOT NULL DEFAULT 0,
        baselined boolean NOT NULL DEFAULT false,
        max_items integer NOT NULL DEFAULT 0,
        consecutive_errors integer NOT NULL DEFAULT 0,
        breaker_state smallint NOT NULL DEFAULT 0 CHECK (breaker_state IN (0, 1, 2)),
        breaker_opened_at timestamptz,
        breaker_openings integer NOT NULL DEFAULT 0,
        breaker_retry_at timestamptz,
        last_failure_alert_at timestamptz,
        last_status text,
        last_error text,
        last_run_at timestamptz
      ) WITH (fillfactor = 70);
      CREATE INDEX poll_job_due ON {schema}.poll_job (due_at) WHERE due_at IS NOT NULL;
      CREATE FUNCTION {schema}.poll_job_due_at() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.due_at := CASE WHEN NEW.paused THEN NULL
                           WHEN NEW.lease_holder IS NOT NULL THEN NEW.lease_expires_at
                           ELSE NEW.next_run_at END;
        RETURN NEW;
      END $$;
      CREATE TRIGGER poll_job_due_at BEFORE INSERT OR UPDATE ON {schema}.poll_job
        FOR EACH ROW EXECUTE FUNCTION {schema}.poll_job_due_at();
      CREATE TABLE {schema}.poll_seen (
        job_id text NOT NULL REFERENCES {schema}.poll_job ON DELETE CASCADE,
        item_id text NOT NULL,
        seen_at timestamptz NOT NULL DEFAULT now(),
        ord bigserial,
        PRIMARY KEY (job_id, item_id)
      );
      CREATE INDEX poll_seen_order ON {schema}.poll_seen (job_id, ord);
      CREATE TABLE {schema}.poll_delivery (
        seq bigserial PRIMARY KEY,
        job_id text NOT NULL REFERENCES {schema}.poll_job ON DELETE CASCADE,
        item_id text NOT NULL,
        channel text NOT NULL,
        recipient text NOT NULL,
        delivered_at timestamptz NOT NULL,
        lease_epoch bigint,
        holder text
      );
      CREATE INDEX poll_delivery_job ON {schema}.poll_delivery (job_id, seq);
      CREATE TABLE {schema}.poll_reconcile (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        config_version bigint NOT NULL,
        reconciled_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
];

type Kind = 'json' | 'time' | 'plain';

/** JobState field → column, how its value travels, and the column's SQL type. */
const PG_COLUMNS: readonly [keyof Omit<JobState, 'jobId'>, string, Kind, string][] = [
  ['cursor', 'cursor', 'json', 'jsonb'],
  ['baselined', 'baselined', 'plain', 'boolean'],
  ['paused', 'paused', 'plain', 'boolean'],
  ['consecutiveErrors', 'consecutive_errors', 'plain', 'integer'],
  ['lastFailureAlertAt', 'last_failure_alert_at', 'time', 'timestamptz'],
  ['nextRunAt', 'next_run_at', 'time', 'timestamptz'],
  ['nominalAt', 'nominal_at', 'time', 'timestamptz'],
  ['scheduleKey', 'schedule_key', 'plain', 'text'],
  ['breakerState', 'breaker_state', 'plain', 'smallint'],
  ['breakerOpenedAt', 'breaker_opened_at', 'time', 'timestamptz'],
  ['breakerOpenings', 'breaker_openings', 'plain', 'integer'],
  ['breakerRetryAt', 'breaker_retry_at', 'time', 'timestamptz'],
  ['lastStatus', 'last_status', 'plain', 'text'],
  ['lastError', 'last_error', 'plain', 'text'],
  ['lastRunAt', 'last_run_at', 'time', 'timestamptz'],
  ['sourceKey', 'source_key', 'plain', 'text'],
  ['atFired', 'at_fired', 'plain', 'text'],
  ['maxItems', 'max_items', 'plain', 'integer'],
];

export type PgRow = Record<string, unknown>;

function toPg(kind: Kind, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (kind === 'json') return JSON.stringify(value);
  if (kind === 'time') return new Date(value as number);
  return value;
}

export const msOf = (v: unknown): number | null => (v instanceof Date ? v.getTime() : null);

export function stateOfRow(r: PgRow): JobState {
  return {
    jobId: String(r.job_id),
    cursor: (r.cursor ?? null) as JobState['cursor'],
    baselined: r.baselined === true,
    paused: r.paused === true,
    consecutiveErrors: Number(r.consecutive_errors),
    lastFailureAlertAt: msOf(r.last_failure_alert_at),
    nextRunAt: msOf(r.next_run_at),
    nominalAt: msOf(r.nominal_at),
    scheduleKey: (r.schedule_key as string | null) ?? null,
    breakerState: Number(r.breaker_state) as BreakerState,
    breakerOpenedAt: msOf(r.breaker_opened_at),
    breakerOpenings: Number(r.breaker_openings),
    breakerRetryAt: msOf(r.breaker_retry_at),
    lastStatus: (r.last_status as TickStatus | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    lastRunAt: msOf(r.last_run_at),
    sourceKey: (r.source_key as string | null) ?? null,
    atFired: (r.at_fired as string | null) ?? null,
    maxItems: Number(r.max_items),
  };
}

/** `SET` clause and values of a state patch, numbered from `$first`. */
export function patchClause(
  patch: Partial<Omit<JobState, 'jobId'>>,
  first: number,
): { sets: string[]; values: unknown[] } {
  const sets: string[] = [];
  const values: unknown[] = [];
  for (const [key, col, kind] of PG_COLUMNS)
    if (Object.hasOwn(patch, key)) {
      values.push(toPg(kind, patch[key]));
      sets.push(`${col} = $${first + values.length - 1}${kind === 'json' ? '::jsonb' : ''}`);
      if (key === 'cursor') sets.push('cursor_version = cursor_version + 1');
    }
  return { sets, values };
}

/** The columns a state patch sets, in table order: patches of one shape are written by one statement. */
export function patchShape(patch: JobStatePatch): string {
  return PG_COLUMNS.filter(([key]) => Object.hasOwn(patch, key))
    .map(([, col]) => col)
    .join(',');
}

/** A value as a field of the JSON document `jsonb_to_recordset` reads (JSON null is SQL NULL there). */
function toRecordField(kind: Kind, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (kind === 'time') return new Date(value as number).toISOString();
  return value;
}

/**
 * One `UPDATE` writing the state patches of many jobs, all of one shape (`patchShape`): the rows travel as
 * one jsonb array read by `jsonb_to_recordset`, so the statement costs one round trip for any number of jobs.
 */
export function bulkPatchStatement(
  table: string,
  patches: readonly { jobId: string; patch: JobStatePatch }[],
): { text: string; values: unknown[] } | null {
  const first = patches[0];
  if (!first) return null;
  const cols = PG_COLUMNS.filter(([key]) => Object.hasOwn(first.patch, key));
  if (cols.length === 0) return null;
  const records = patches.map(({ jobId, patch }) => {
    const rec: Record<string, unknown> = { job_id: jobId };
    for (const [key, col, kind] of cols) rec[col] = toRecordField(kind, patch[key]);
    return rec;
  });
  const sets = cols.map(([, col]) => `${col} = x.${col}`);
  if (cols.some(([key]) => key === 'cursor')) sets.push('cursor_version = j.cursor_version + 1');
  const types = ['job_id text', ...cols.map(([, col, , type]) => `${col} ${type}`)].join(', ');
  return {
    text: `UPDATE ${table} j SET ${sets.join(', ')}
           FROM jsonb_to_recordset($1::jsonb) AS x(${types}) WHERE j.job_id = x.job_id`,
    values: [JSON.stringify(records)],
  };
}
