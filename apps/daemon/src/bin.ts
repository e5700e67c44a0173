#!/usr/bin/env node
/** The `agent` command: with no sub-command it runs the daemon in the foreground. */
// Client commands must start fast and the daemon must weigh little: a plain command line (a client command,
// or the daemon's own options) never loads yargs; each command loads only the client it runs, and the
// daemon's modules are imported only when the daemon runs.
import { plainLineRequest, POLLERS_ACTIONS, processIO, runClient } from '@agent/cli/commands';

const io = processIO();

const args = process.argv.slice(2);
try {
  // A plain client command line does not load yargs (see plainLineRequest).
  const plain = plainLineRequest(args);
  if (plain) io.setExitCode(await runClient(io, plain));
  // `agent --version` alone prints what yargs would, without loading it.
  else if (args.length === 1 && args[0] === '--version')
    io.out((await import('./version.js')).DAEMON_VERSION);
  else {
    const line = await import('./command-line.js');
    const daemon = line.plainDaemonLine(args);
    if (daemon) await line.runDaemonCommand(io, daemon);
    else await line.parseCommandLine(args, io);
  }
} catch (err) {
  const { USAGE_EXIT_CODE, UsageError, usageErrorLines } = await import('./usage.js');
  if (err instanceof UsageError) {
    const lines = usageErrorLines(err.message, args, {
      reload: [],
      pollers: POLLERS_ACTIONS,
      config: ['push'],
      cluster: ['status'],
      completion: [],
    });
    for (const l of lines) io.err(l);
    process.exitCode = USAGE_EXIT_CODE;
  } else {
    io.err(`agent: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
