/** The ack of a reload (and of its preview): what the reload made of every agent, job and file. */
import { formatIssue, type ConfigIssue, type ConfigSnapshot, type LoadResult } from '@agent/config-snapshot';
import type { RestartRequiredJson } from '@agent/admin-api';
import type { ReloadAck } from '@agent/cli';
import type { ApplyReport, RestartReport } from './subsystem.js';

/** What each subsystem made of the new snapshot, by subsystem name. */
export type ApplyReports = ReadonlyMap<string, ApplyReport>;

/** Problems of whole files or of their parts outside agents and jobs (which are reported by name). */
export function fileErrors(r: LoadResult): ConfigIssue[] {
  return r.errors.filter((e) => e.scope !== 'agent' && e.scope !== 'job');
}

export function rejectedTotal(ack: ReloadAck): number {
  return ack.rejected.length + ack.rejected_jobs.length + ack.errors.length;
}

export function makeAck(
  req: { requestId?: string },
  r: LoadResult | null,
  reports: ApplyReports,
  current: ConfigSnapshot,
  elapsed: number,
): ReloadAck {
  const redact = current.redact;
  const all = [...reports.values()];
  return {
    request_id: req.requestId ?? '',
    version: current.version,
    applied: r?.snapshot ? r.applied : [],
    rejected: (r?.rejected ?? []).map((x) => ({ agent_id: x.agentId, reason: redact(x.reason) })),
    rejected_jobs: all.flatMap((rep) =>
      (rep.rejectedJobs ?? []).map((j) => ({
        job_id: j.jobId,
        reason: redact(j.reasons.join('; ')),
        running: j.running,
      })),
    ),
    errors: r
      ? fileErrors(r).map((e) => ({ file: e.file, reason: redact(formatIssue(e)) }))
      : [{ file: '', reason: 'the configuration could not be read; see the daemon log' }],
    restart_required: [
      ...(r?.restartRequired ?? []).map(({ agentId, ...c }) => ({
        ...(agentId ? { agent_id: agentId } : {}),
        ...located(c),
      })),
      ...all.flatMap((rep) => (rep.restartRequired ?? []).map(located)),
    ],
    ...pollerPlanOf(reports),
    elapsed_ms: Math.round(elapsed * 10) / 10,
  };
}

/** A restart-required change on the wire: field, reason, then the file and line where known. */
function located(c: RestartReport): RestartRequiredJson {
  return {
    field: c.field,
    reason: c.reason,
    ...(c.file !== undefined ? { file: c.file } : {}),
    ...(c.line !== undefined ? { line: c.line } : {}),
  };
}

/** The poller jobs' plan (without the rejections, which are `rejected_jobs`), when the subsystem planned. */
function pollerPlanOf(reports: ApplyReports): Pick<ReloadAck, 'pollers'> {
  const plan = reports.get('pollers')?.plan;
  return plan
    ? { pollers: { add: plan.add, replace: plan.replace, remove: plan.remove, keep: plan.keep } }
    : {};
}
