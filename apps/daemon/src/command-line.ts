/**
 * The `agent` command line as yargs declares it: the daemon (no sub-command), `--check-config`, `config push`,
 * the client commands, help and completion. yargs is imported only for lines that are not plain (see
 * `plainLineRequest`, `plainDaemonLine`): a daemon started plainly never holds it in memory.
 */
import {
  cliCommands,
  keepRunningOnClosedStdout,
  plainValues,
  runClient,
  type ClientRunner,
  type CliIO,
  type OptionTable,
} from '@agent/cli/commands';
import type { LogFormat } from '@agent/log';
import { UsageError } from './usage.js';
import { DAEMON_VERSION } from './version.js';

const DAEMON_EXIT =
  'Exit codes: 0 stopped cleanly after SIGTERM or SIGINT; 1 cannot start (invalid configuration, a port in use, another daemon on the data dir), a second signal, a stop past shutdown_grace_ms + 5 s; 2 usage error. With --check-config: 0 the daemon would start with nothing rejected; 1 any error (a file, an agent, a job, a kind package, a start check); 2 usage error.';

const DAEMON_OPTIONS = {
  'config-dir': { type: 'string', requiresArg: true, default: './config', describe: 'Config directory' },
  'log-format': {
    type: 'string',
    choices: ['kv', 'json'],
    describe: 'Log format (overrides runtime.yaml)',
  },
  'log-level': {
    type: 'string',
    choices: ['debug', 'info', 'warn', 'error'],
    describe: 'Log level (overrides runtime.yaml)',
  },
  'check-config': {
    type: 'boolean',
    default: false,
    describe: "Run the daemon's own checks of every file and job without starting, and exit (1 on any error)",
  },
} as const satisfies OptionTable;

/** The daemon's command line (no command words): run it, or `--check-config`. */
export interface DaemonArgs {
  configDir: string;
  logFormat?: LogFormat;
  logLevel?: string;
  checkConfig: boolean;
}

export type DaemonRunner = (io: CliIO, args: DaemonArgs) => Promise<void>;

const daemonArgs = (argv: Record<string, unknown>): DaemonArgs => ({
  configDir: String(argv['config-dir']),
  ...(argv['log-format'] !== undefined ? { logFormat: argv['log-format'] as LogFormat } : {}),
  ...(argv['log-level'] !== undefined ? { logLevel: String(argv['log-level']) } : {}),
  checkConfig: argv['check-config'] === true,
});

/** The daemon's arguments when `args` is a plain daemon line; undefined when yargs is to parse it. */
export function plainDaemonLine(args: readonly string[]): DaemonArgs | undefined {
  const values = plainValues(args, { options: DAEMON_OPTIONS });
  return values && daemonArgs(values);
}

export const runDaemonCommand: DaemonRunner = async (io, args) => {
  if (args.checkConfig) process.exitCode = await checkConfig(io, args.configDir);
  else await runDaemon(io, args.configDir, args.logFormat, args.logLevel);
};

async function runDaemon(
  io: CliIO,
  configDir: string,
  logFormat: LogFormat | undefined,
  logLevel: string | undefined,
): Promise<void> {
  const [{ createLogger, isLogLevel }, { routeWarnings, signalStopper, STOP_MARGIN_MS, uncaughtLogger }] =
    await Promise.all([import('@agent/log'), import('./process-guards.js')]);
  // Before start-up, so that a signal or a warning during start is not handled by Node's defaults.
  keepRunningOnClosedStdout();
  const warnings = routeWarnings();
  const stopper = signalStopper((code) => process.exit(code));
  process.on('SIGTERM', stopper.onSignal);
  process.on('SIGINT', stopper.onSignal);

  const { DaemonStartError, startDaemon } = await import('./daemon.js');
  let daemon;
  try {
    daemon = await startDaemon({
      configDir,
      ...(logFormat ? { logFormat } : {}),
      ...(isLogLevel(logLevel) ? { logLevel } : {}),
    });
  } catch (err) {
    warnings.attach(createLogger(logFormat ? { format: logFormat } : {}));
    io.err(
      `agent: ${err instanceof DaemonStartError ? err.message : `cannot start: ${(err as Error).message}`}`,
    );
    process.exitCode = 1;
    return;
  }
  const log = daemon.logger;
  warnings.attach(log);
  process.on('unhandledRejection', (reason) =>
    log.error('unhandled rejection', { err: reason instanceof Error ? reason.message : String(reason) }),
  );
  process.on('uncaughtException', uncaughtLogger(log));
  stopper.attach({
    stop: () => daemon.stop(),
    logger: log,
    // Read when the signal comes: shutdown_grace_ms is hot.
    get boundMs() {
      return daemon.store.current().runtime.shutdown_grace_ms + STOP_MARGIN_MS;
    },
  });
}

async function checkConfig(io: CliIO, configDir: string): Promise<number> {
  const { checkConfig: check } = await import('./check-config.js');
  const out = await check(configDir);
  for (const l of out.stderr) io.err(l);
  for (const l of out.stdout) io.out(l);
  return out.exitCode;
}

/**
 * Parses and runs a command line; a usage error rejects with `UsageError`. `run` runs client commands and
 * `daemon` the daemon's line (replaced in tests).
 */
export async function parseCommandLine(
  args: string[],
  io: CliIO,
  run: ClientRunner = runClient,
  daemon: DaemonRunner = runDaemonCommand,
): Promise<void> {
  const { default: yargs } = await import('yargs');
  await yargs(args)
    .scriptName('agent')
    .usage('$0 [command]\n\nWith no command, runs the daemon in the foreground.')
    .command(
      '$0',
      'Run the daemon in the foreground',
      (y) => y.options(DAEMON_OPTIONS).epilogue(DAEMON_EXIT),
      (argv) => daemon(io, daemonArgs(argv)),
    )
    .command(cliCommands(io, run))
    .command(
      'config <action>',
      'Cluster mode: `push` checks the config directory and stores it as the next config bundle in PostgreSQL',
      (y) =>
        y
          .positional('action', { choices: ['push'] as const, demandOption: true })
          .option('config-dir', {
            type: 'string',
            requiresArg: true,
            default: './config',
            describe: 'Config directory',
          })
          .option('watch', {
            type: 'boolean',
            default: false,
            describe: 'Push again after every save, until Ctrl-C',
          })
          .option('new-version', {
            type: 'boolean',
            default: false,
            describe:
              'Store a new version even when the texts are the desired ones: applies secret files or host-local files changed on the hosts',
          })
          .epilogue(
            'Exit codes: 0 pushed, or the same texts are the desired bundle already; 1 the check failed, not in cluster mode, or PostgreSQL failed; 2 usage error. Daemons apply a pushed bundle at their next heartbeat; `agent reload` applies it at once and reports every daemon.',
          ),
      async (argv) => {
        const { runConfigPush } = await import('./config-push.js');
        process.exitCode = await runConfigPush(io, {
          configDir: argv['config-dir'],
          watch: argv.watch,
          newVersion: argv['new-version'],
        });
      },
    )
    .strict()
    .recommendCommands()
    .completion('completion', 'Print a shell completion script')
    .help()
    .version(DAEMON_VERSION)
    // A usage error is not a failure of the command: exit 2 with a short hint, never the whole help.
    .fail((msg, err) => {
      if (err && err.name !== 'YError') throw err;
      throw new UsageError(msg ?? err?.message ?? 'invalid command line');
    })
    .parseAsync();
}
