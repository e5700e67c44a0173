/**
 * `agent cluster status` as yargs declares it. The client that runs it (`cluster.js`) is loaded only when the
 * command runs.
 */
import type { Argv, CommandModule } from 'yargs';
import { adminClientOptions } from './admin-options.js';
import type { CliIO } from './io.js';

export function clusterCommand(io: CliIO): CommandModule {
  return {
    command: 'cluster <action>',
    describe:
      'Cluster mode: `status` lists the members, their config versions, the jobs and chat partitions they hold, and who polls each bot',
    builder: (y: Argv) =>
      adminClientOptions(
        y.positional('action', { choices: ['status'] as const, demandOption: true }),
      ).epilogue(
        'Exit codes: 0 every member is live and runs the desired config; 1 no answer, or the daemon runs in single-host mode; 2 a member is stale or runs another config version, or usage error.',
      ),
    handler: async (argv) => {
      const { runClusterStatus } = await import('./cluster.js');
      io.setExitCode(
        await runClusterStatus(io, {
          ...(argv['admin-url'] !== undefined ? { adminUrl: String(argv['admin-url']) } : {}),
          configDir: String(argv['config-dir']),
          json: Boolean(argv.json),
        }),
      );
    },
  };
}
