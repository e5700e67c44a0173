/** What `agent pollers list|show|run|pause|resume|reset|reload` do: clients of the daemon's loopback admin API. */
import type {
  AdminJobDetail,
  AdminJobList,
  AdminJobSummary,
  AdminRunResult,
  ReloadPlanJson,
} from '@agent/admin-api';
import {
  adminRequest,
  closeAdminClient,
  CliError,
  resolveAdminTarget,
  RUN_TIMEOUT_MS,
  type AdminTarget,
} from './admin-client.js';
import { formatJobDetail, formatJobTable, formatReloadPlan, formatRunResult, formatTime } from './format.js';
import type { CliIO } from './io.js';
import type { PollersAction } from './pollers-command.js';

export interface PollersArgs {
  action: PollersAction;
  id?: string;
  json?: boolean;
  yes?: boolean;
  /** `reload` only: preview the plan, apply nothing. */
  dryRun?: boolean;
  adminUrl?: string;
  configDir: string;
}

export const RESET_NEEDS_YES = (id: string): string =>
  `agent pollers reset: resetting "${id}" clears its cursor, seen items and errors, and the next tick records a new baseline; run again with --yes to confirm`;

const enc = encodeURIComponent;

/** Runs one pollers command; returns the exit code. Never throws. */
export async function runPollers(io: CliIO, args: PollersArgs): Promise<number> {
  if (args.action === 'reset' && !args.yes) {
    io.err(RESET_NEEDS_YES(args.id ?? ''));
    return 2;
  }
  let target: AdminTarget;
  try {
    target = resolveAdminTarget({
      adminUrl: args.adminUrl,
      configDir: args.configDir,
      cwd: io.cwd,
      env: io.env,
    });
  } catch (err) {
    io.err(`agent pollers: ${(err as Error).message}`);
    return 1;
  }
  // One write for the whole table: a thousand rows are a thousand writes to a pipe otherwise.
  const out = (lines: string[]): void => {
    if (lines.length > 0) io.out(lines.join('\n'));
  };
  const json = (v: unknown) => io.out(JSON.stringify(v, null, 2));
  const id = args.id ?? '';
  try {
    switch (args.action) {
      case 'list': {
        const body = await adminRequest<AdminJobList>(target, 'GET', '/admin/pollers');
        if (args.json) json(body);
        else out(formatJobTable(body.jobs, io.color, body.rejected ?? []));
        return 0;
      }
      case 'show': {
        const body = await adminRequest<AdminJobDetail>(target, 'GET', `/admin/pollers/${enc(id)}`);
        if (args.json) json(body);
        else out(formatJobDetail(body, io.color));
        return 0;
      }
      case 'run': {
        const body = await adminRequest<AdminRunResult>(target, 'POST', `/admin/pollers/${enc(id)}/run`, {
          timeoutMs: RUN_TIMEOUT_MS,
        });
        if (args.json) json(body);
        else out(formatRunResult(id, body, io.color));
        return body.status === 'ok' || body.status === 'skipped' ? 0 : 1;
      }
      case 'pause':
      case 'resume': {
        const body = await adminRequest<AdminJobSummary>(
          target,
          'POST',
          `/admin/pollers/${enc(id)}/${args.action}`,
        );
        if (args.json) json(body);
        else if (args.action === 'pause') io.out(`paused ${body.id}`);
        else
          io.out(
            `resumed ${body.id}${body.next_run_at ? ` (next run ${formatTime(body.next_run_at)})` : ''}`,
          );
        return 0;
      }
      case 'reset': {
        const body = await adminRequest<AdminJobSummary>(target, 'POST', `/admin/pollers/${enc(id)}/reset`, {
          body: { confirm: true },
        });
        if (args.json) json(body);
        else
          io.out(
            `reset ${body.id}: cursor, seen items and errors cleared; the next tick records a new baseline`,
          );
        return 0;
      }
      case 'reload': {
        const path = `/admin/pollers/reload${args.dryRun ? '?dry_run=1' : ''}`;
        const body = await adminRequest<ReloadPlanJson>(target, 'POST', path, {
          timeoutMs: RUN_TIMEOUT_MS,
        });
        if (args.json) json(body);
        else out(formatReloadPlan(body, io.color));
        // The plan lists the agents too: a rejected agent is a rejection like a job's or a file's.
        const rejections =
          body.rejected.length + (body.errors ?? []).length + (body.agents?.rejected.length ?? 0);
        return rejections > 0 ? 2 : 0;
      }
    }
  } catch (err) {
    if (err instanceof CliError && err.code === 'CLI_DAEMON_DOWN') io.err(`agent pollers: ${err.message}`);
    else io.err(`agent pollers ${args.action}: ${(err as Error).message}`);
    return 1;
  } finally {
    await closeAdminClient();
  }
}
