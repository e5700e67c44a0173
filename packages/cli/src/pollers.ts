/** `agent pollers list|show|run|pause|resume|reset|reload`: clients of the daemon's loopback admin API. */
import type {
  AdminJobDetail,
  AdminJobList,
  AdminJobSummary,
  AdminRunResult,
  ReloadPlanJson,
} from '@agent/admin-api';
import type { Argv, CommandModule } from 'yargs';
import {
  adminRequest,
  ADMIN_URL_ENV,
  closeAdminClient,
  CliError,
  resolveAdminTarget,
  RUN_TIMEOUT_MS,
  type AdminTarget,
} from './admin-client.js';
import { formatJobDetail, formatJobTable, formatReloadPlan, formatRunResult, formatTime } from './format.js';
import type { CliIO } from './io.js';

export type PollersAction = 'list' | 'show' | 'run' | 'pause' | 'resume' | 'reset' | 'reload';

export const POLLERS_ACTIONS: readonly PollersAction[] = [
  'list',
  'show',
  'run',
  'pause',
  'resume',
  'reset',
  'reload',
];

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
  const out = (lines: string[]) => lines.forEach((l) => io.out(l));
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
        return body.rejected.length > 0 || (body.errors ?? []).length > 0 ? 2 : 0;
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

/** The options of every command that talks to the admin API: where it is, and JSON output. */
export interface AdminClientArgs {
  'admin-url'?: string;
  'config-dir': string;
  json: boolean;
}

export function adminClientOptions(y: Argv): Argv<AdminClientArgs> {
  return y
    .option('admin-url', {
      type: 'string',
      requiresArg: true,
      describe: `Admin server URL (default: ${ADMIN_URL_ENV}, else runtime.yaml admin.listen)`,
    })
    .option('config-dir', {
      type: 'string',
      requiresArg: true,
      default: './config',
      describe: 'Config directory whose runtime.yaml names the admin server',
    })
    .option('json', {
      type: 'boolean',
      default: false,
      describe: 'Print the API answer as JSON',
    }) as Argv<AdminClientArgs>;
}

function sub(
  io: CliIO,
  action: PollersAction,
  describe: string,
  extra: (y: Argv<AdminClientArgs>) => Argv<AdminClientArgs> = (y) => y,
): CommandModule<object, AdminClientArgs & { id?: string; yes?: boolean; 'dry-run'?: boolean }> {
  const withId = action !== 'list' && action !== 'reload';
  return {
    command: withId ? `${action} <id>` : action,
    describe,
    builder: (y: Argv) => {
      let b = adminClientOptions(y);
      if (withId)
        b = b.positional('id', { type: 'string', describe: 'Job id (see agent pollers list)' }) as never;
      return extra(b) as never;
    },
    handler: async (argv) => {
      io.setExitCode(
        await runPollers(io, {
          action,
          ...(argv.id !== undefined ? { id: String(argv.id) } : {}),
          json: argv.json,
          yes: Boolean(argv.yes),
          ...(argv['dry-run'] ? { dryRun: true } : {}),
          ...(argv['admin-url'] !== undefined ? { adminUrl: argv['admin-url'] } : {}),
          configDir: argv['config-dir'],
        }),
      );
    },
  };
}

/** What each exit code means per command; the help epilogues and the table in `docs/cli.md` say the same. */
export interface ExitCodes {
  /** 0 */
  ok: string;
  /** 1 */
  failed: string;
  /** 2, besides a usage error. */
  attention?: string;
}

const NOT_RUNNING = 'daemon not running';
export const POLLERS_EXIT_CODES: Readonly<Record<PollersAction, ExitCodes>> = {
  list: { ok: 'done', failed: `${NOT_RUNNING}, API error` },
  show: { ok: 'done', failed: `${NOT_RUNNING}, unknown job, API error` },
  run: {
    ok: 'the tick was ok or skipped',
    failed: `the tick failed, ${NOT_RUNNING}, unknown job, API error`,
  },
  pause: { ok: 'done', failed: `${NOT_RUNNING}, unknown job, API error` },
  resume: { ok: 'done', failed: `${NOT_RUNNING}, unknown job, API error` },
  reset: {
    ok: 'done',
    failed: `${NOT_RUNNING}, unknown job, API error`,
    attention: 'without --yes (nothing changed)',
  },
  reload: {
    ok: 'nothing rejected',
    failed: `${NOT_RUNNING}, nothing applied (a global file invalid, every agent rejected, a restart needed), API error`,
    attention: 'a job or a file was rejected (the rest applied)',
  },
};

/** `Exit codes: 0 …, 1 …, 2 … or usage error.` */
export function exitCodesEpilogue(c: ExitCodes): string {
  return `Exit codes: 0 ${c.ok}; 1 ${c.failed}; 2 ${c.attention ? `${c.attention}, or ` : ''}usage error.`;
}

/** `agent pollers <command>`. */
export function pollersCommand(io: CliIO): CommandModule<object, object> {
  const withExit = (
    action: PollersAction,
    describe: string,
    extra?: (y: Argv<AdminClientArgs>) => Argv<AdminClientArgs>,
  ) =>
    sub(io, action, describe, (y) =>
      (extra ? extra(y) : y).epilogue(exitCodesEpilogue(POLLERS_EXIT_CODES[action])),
    );
  return {
    command: 'pollers <command>',
    describe: 'Operate the poller jobs of the running daemon (through its loopback admin API)',
    builder: (argv: Argv) =>
      // The flags every sub-command takes, so that `agent pollers --help` lists them too.
      adminClientOptions(argv)
        .command(withExit('list', 'List every job: schedule, paused, breaker, last and next run, errors'))
        .command(withExit('show', 'Show one job: status, config (secrets redacted), cursor, lease holder'))
        .command(
          withExit('run', 'Run one tick now (bypasses schedule and lease) and print status and item counts'),
        )
        .command(withExit('pause', 'Pause a job (persisted)'))
        .command(withExit('resume', 'Resume a paused job'))
        .command(
          withExit(
            'reset',
            'Clear the cursor, seen items and errors of a job (destructive; needs --yes)',
            (y) =>
              y.option('yes', { type: 'boolean', default: false, describe: 'Confirm the reset' }) as never,
          ),
        )
        .command(
          withExit(
            'reload',
            'Re-read the config and apply the poller diff; print the plan and rejected jobs (--dry-run: preview, apply nothing; the exit codes say what the reload would do)',
            (y) =>
              y.option('dry-run', {
                type: 'boolean',
                default: false,
                describe: 'Preview: validate and plan like a reload, apply nothing',
              }) as never,
          ),
        )
        .demandCommand(1, 'name a pollers command: list, show, run, pause, resume, reset or reload')
        .epilogue(
          `The admin URL is --admin-url, else ${ADMIN_URL_ENV}, else admin.listen of <config-dir>/runtime.yaml (default http://127.0.0.1:9091). Exit codes: see agent pollers <command> --help.`,
        ),
    handler: () => {},
  };
}
