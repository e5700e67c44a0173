/** How operators see a job: its summary and its detail, secrets redacted. */
import { breakerName } from './breaker.js';
import type { JobRuntime } from './job.js';
import { nextRealRun } from './next-run.js';
import type { JobDetail, JobSummary } from './runner-api.js';
import type { JobState, LeaseInfo } from './store.js';
import type { JobDefinition } from './validate.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function describeSchedule(def: JobDefinition): string {
  const s = def.scheduleSpec as Record<string, unknown>;
  if ('every_secs' in s) return `every ${String(s.every_secs)}s`;
  if ('cron' in s) return `cron "${String(s.cron)}"${s.tz ? ` ${String(s.tz)}` : ' UTC'}`;
  return `at ${String(s.at)}`;
}

function redactDeep(value: unknown, redact: (t: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, redact)]));
  return value;
}

/** `staleReason`: why the job's current entry is rejected while this definition keeps running. */
export function summaryOf(rt: JobRuntime, st: JobState, staleReason: string | null): JobSummary {
  return {
    id: rt.def.id,
    kind: rt.def.kind.kind,
    agent: rt.def.agent,
    schedule: describeSchedule(rt.def),
    paused: st.paused,
    breaker: breakerName(st.breakerState),
    breaker_state: st.breakerState,
    consecutive_errors: st.consecutiveErrors,
    last_status: st.lastStatus,
    last_error: st.lastError,
    last_run_at: iso(st.lastRunAt),
    next_run_at: iso(nextRealRun(st)),
    definition: staleReason === null ? 'current' : 'stale',
    definition_error: staleReason,
  };
}

export function detailOf(
  summary: JobSummary,
  rt: JobRuntime,
  st: JobState,
  extra: { seenIds: number; lease: LeaseInfo | null; redact(text: string): string },
): JobDetail {
  const { lease } = extra;
  const cursorJson = st.cursor === null ? '' : JSON.stringify(st.cursor);
  return {
    ...summary,
    config: redactDeep(rt.def.config, extra.redact) as Record<string, unknown>,
    deliver: { ...rt.def.deliver },
    failure_to: rt.def.failureTo ? { ...rt.def.failureTo } : null,
    cursor: { present: st.cursor !== null, bytes: Buffer.byteLength(cursorJson) },
    seen_ids: extra.seenIds,
    baselined: st.baselined,
    last_failure_alert_at: iso(st.lastFailureAlertAt),
    lease: lease
      ? { holder: lease.holder, epoch: lease.epoch, expires_at: new Date(lease.expiresAt).toISOString() }
      : null,
  };
}
