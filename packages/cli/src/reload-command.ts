/**
 * `agent reload` as yargs declares it (options, help, exit codes). The client that runs it (`reload.js`: the
 * config reader and, once it runs, the broker client) is loaded only when the command runs.
 */
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { runClient, type ClientRequest, type ClientRunner } from './client-request.js';
import type { CliIO } from './io.js';
import type { OptionTable } from './option-table.js';

export interface ReloadArgs {
  'config-dir': string;
  json: boolean;
  'dry-run': boolean;
}

export const RELOAD_OPTIONS = {
  'config-dir': { type: 'string', default: './config', describe: 'Config directory of the daemon' },
  json: { type: 'boolean', default: false, describe: 'Print the ack as JSON' },
  'dry-run': {
    type: 'boolean',
    default: false,
    describe: 'Preview: validate and plan like a reload, apply nothing',
  },
} as const satisfies OptionTable;

export const reloadRequest = (argv: ReloadArgs): ClientRequest => ({
  command: 'reload',
  args: { configDir: argv['config-dir'], json: argv.json, dryRun: argv['dry-run'] },
});

export function reloadCommand(io: CliIO, run: ClientRunner = runClient): CommandModule<object, ReloadArgs> {
  return {
    command: 'reload',
    describe: 'Ask the running daemon to reload its configuration and print the result',
    builder: (y: Argv) =>
      y
        .options(RELOAD_OPTIONS)
        .epilogue(
          'Exit codes: 0 applied with nothing rejected; 1 no ack (daemon not reachable, runtime.reload.enabled: false, or no answer within 5 s), unreadable config dir; 2 anything rejected (an agent, a job or a file; the rest applied), or usage error. With --dry-run the codes say what the reload would do. In cluster mode, 3: a live daemon did not answer, or the daemons disagree on the config.',
        ) as unknown as Argv<ReloadArgs>,
    handler: async (argv: ArgumentsCamelCase<ReloadArgs>) =>
      io.setExitCode(await run(io, reloadRequest(argv))),
  };
}
