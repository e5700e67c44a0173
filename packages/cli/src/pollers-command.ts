/**
 * `agent pollers list|show|run|pause|resume|reset|reload`: the commands as yargs declares them (options, help,
 * exit codes). The client that runs one (`pollers.js`) is loaded only when a command runs.
 */
import type { Argv, CommandModule } from 'yargs';
import {
  ADMIN_CLIENT_OPTIONS,
  ADMIN_URL_ENV,
  adminClientOptions,
  type AdminClientArgs,
} from './admin-options.js';
import { runClient, type ClientRequest, type ClientRunner } from './client-request.js';
import type { CliIO } from './io.js';
import type { OptionTable } from './option-table.js';

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

/** Whether the command names a job (`agent pollers show <id>`). */
export const pollersTakesId = (action: PollersAction): boolean => action !== 'list' && action !== 'reload';

const RESET_OPTIONS = {
  ...ADMIN_CLIENT_OPTIONS,
  yes: { type: 'boolean', default: false, describe: 'Confirm the reset' },
} as const satisfies OptionTable;

const RELOAD_OPTIONS = {
  ...ADMIN_CLIENT_OPTIONS,
  'dry-run': {
    type: 'boolean',
    default: false,
    describe: 'Preview: validate and plan like a reload, apply nothing',
  },
} as const satisfies OptionTable;

/** Every option a pollers command takes. */
export function pollersOptions(action: PollersAction): OptionTable {
  if (action === 'reset') return RESET_OPTIONS;
  if (action === 'reload') return RELOAD_OPTIONS;
  return ADMIN_CLIENT_OPTIONS;
}

export type PollersArgv = AdminClientArgs & { id?: string | number; yes?: boolean; 'dry-run'?: boolean };

export function pollersRequest(action: PollersAction, argv: PollersArgv): ClientRequest {
  return {
    command: 'pollers',
    args: {
      action,
      ...(argv.id !== undefined ? { id: String(argv.id) } : {}),
      json: argv.json,
      yes: Boolean(argv.yes),
      ...(argv['dry-run'] ? { dryRun: true } : {}),
      ...(argv['admin-url'] !== undefined ? { adminUrl: argv['admin-url'] } : {}),
      configDir: argv['config-dir'],
    },
  };
}

function sub(
  io: CliIO,
  run: ClientRunner,
  action: PollersAction,
  describe: string,
): CommandModule<object, PollersArgv> {
  const withId = pollersTakesId(action);
  return {
    command: withId ? `${action} <id>` : action,
    describe,
    builder: (y: Argv) => {
      let b = y.options(pollersOptions(action));
      if (withId) b = b.positional('id', { type: 'string', describe: 'Job id (see agent pollers list)' });
      return b.epilogue(exitCodesEpilogue(POLLERS_EXIT_CODES[action])) as unknown as Argv<PollersArgv>;
    },
    handler: async (argv) => io.setExitCode(await run(io, pollersRequest(action, argv))),
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
    attention: 'a job, an agent or a file was rejected (the rest applied)',
  },
};

/** `Exit codes: 0 …, 1 …, 2 … or usage error.` */
export function exitCodesEpilogue(c: ExitCodes): string {
  return `Exit codes: 0 ${c.ok}; 1 ${c.failed}; 2 ${c.attention ? `${c.attention}, or ` : ''}usage error.`;
}

/** `agent pollers <command>`. */
export function pollersCommand(io: CliIO, run: ClientRunner = runClient): CommandModule<object, object> {
  const cmd = (action: PollersAction, describe: string) => sub(io, run, action, describe);
  return {
    command: 'pollers <command>',
    describe: 'Operate the poller jobs of the running daemon (through its loopback admin API)',
    builder: (argv: Argv) =>
      // The flags every sub-command takes, so that `agent pollers --help` lists them too.
      adminClientOptions(argv)
        .command(cmd('list', 'List every job: schedule, paused, breaker, last and next run, errors'))
        .command(cmd('show', 'Show one job: status, config (secrets redacted), cursor, lease holder'))
        .command(
          cmd(
            'run',
            'Run one tick now (off schedule; in cluster mode it takes the lease of the job) and print status and item counts',
          ),
        )
        .command(cmd('pause', 'Pause a job (persisted)'))
        .command(cmd('resume', 'Resume a paused job'))
        .command(cmd('reset', 'Clear the cursor, seen items and errors of a job (destructive; needs --yes)'))
        .command(
          cmd(
            'reload',
            'Re-read the config and apply the poller diff; print the plan, rejected jobs and what became of the agents (--dry-run: preview, apply nothing; the exit codes say what the reload would do)',
          ),
        )
        .demandCommand(1, 'name a pollers command: list, show, run, pause, resume, reset or reload')
        .epilogue(
          `The admin URL is --admin-url, else ${ADMIN_URL_ENV}, else admin.listen of <config-dir>/runtime.yaml (default http://127.0.0.1:9091). Exit codes: see agent pollers <command> --help.`,
        ),
    handler: () => {},
  };
}
