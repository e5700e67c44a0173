#!/usr/bin/env node
/** The `agent` command: with no sub-command it runs the daemon in the foreground. */
// Client commands must start fast: the daemon's modules are imported only when the daemon runs.
import { cliCommands, processIO } from '@agent/cli';
import { isLogLevel, type LogFormat } from '@agent/log';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';

const io = processIO();

async function runDaemon(
  configDir: string,
  logFormat: LogFormat | undefined,
  logLevel: string | undefined,
): Promise<void> {
  const { DaemonStartError, startDaemon } = await import('./daemon.js');
  let daemon;
  try {
    daemon = await startDaemon({
      configDir,
      ...(logFormat ? { logFormat } : {}),
      ...(isLogLevel(logLevel) ? { logLevel } : {}),
    });
  } catch (err) {
    io.err(
      `agent: ${err instanceof DaemonStartError ? err.message : `cannot start: ${(err as Error).message}`}`,
    );
    process.exitCode = 1;
    return;
  }
  const log = daemon.logger;
  process.on('unhandledRejection', (reason) =>
    log.error('unhandled rejection', { err: reason instanceof Error ? reason.message : String(reason) }),
  );
  process.on('uncaughtException', (err) => log.error('uncaught exception', { err: err.message }));
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      log.warn('second signal: exiting now', { signal: sig });
      process.exit(1);
    }
    log.info('signal received', { signal: sig });
    void daemon.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

async function checkConfig(configDir: string): Promise<number> {
  const { checkConfig: check } = await import('./check-config.js');
  const out = await check(configDir);
  for (const l of out.stderr) io.err(l);
  for (const l of out.stdout) io.out(l);
  return out.exitCode;
}

await yargs(hideBin(process.argv))
  .scriptName('agent')
  .usage('$0 [command]\n\nWith no command, runs the daemon in the foreground.')
  .command(
    '$0',
    'Run the daemon in the foreground',
    (y) =>
      y
        .option('config-dir', { type: 'string', default: './config', describe: 'Config directory' })
        .option('log-format', {
          choices: ['kv', 'json'] as const,
          describe: 'Log format (overrides runtime.yaml)',
        })
        .option('log-level', {
          choices: ['debug', 'info', 'warn', 'error'] as const,
          describe: 'Log level (overrides runtime.yaml)',
        })
        .option('check-config', {
          type: 'boolean',
          default: false,
          describe: 'Validate every config file and exit (1 on any error)',
        }),
    async (argv) => {
      if (argv['check-config']) {
        process.exitCode = await checkConfig(argv['config-dir']);
        return;
      }
      await runDaemon(argv['config-dir'], argv['log-format'], argv['log-level']);
    },
  )
  .command(cliCommands(io))
  .strict()
  .completion('completion', 'Print a shell completion script')
  .help()
  .version(false)
  .parseAsync();
