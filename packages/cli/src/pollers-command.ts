/**
 * `agent pollers list|show|run|pause|resume|reset|reload`: the commands as yargs declares them (options, help,
 * exit codes). The client that runs one (`pollers.js`) is loaded only when a command runs.
 */
import type { Argv, CommandModule } from 'yargs';
import { ADMIN_URL_ENV, adminClientOptions, type AdminClientArgs } from './admin-options.js';
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
      const { runPollers } = await import('./pollers.js');
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
          withExit(
            'run',
            'Run one tick now (off schedule; in cluster mode it takes the lease of the job) and print status and item counts',
          ),
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
