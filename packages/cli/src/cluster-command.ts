/**
 * `agent cluster status` as yargs declares it. The client that runs it (`cluster.js`) is loaded only when the
 * command runs.
 */
import type { Argv, CommandModule } from 'yargs';
import { adminClientOptions, type AdminClientArgs } from './admin-options.js';
import { runClient, type ClientRequest, type ClientRunner } from './client-request.js';
import type { CliIO } from './io.js';

export const clusterStatusRequest = (argv: AdminClientArgs): ClientRequest => ({
  command: 'cluster status',
  args: {
    ...(argv['admin-url'] !== undefined ? { adminUrl: String(argv['admin-url']) } : {}),
    configDir: String(argv['config-dir']),
    json: Boolean(argv.json),
  },
});

export function clusterCommand(
  io: CliIO,
  run: ClientRunner = runClient,
): CommandModule<object, AdminClientArgs> {
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
    handler: async (argv) => io.setExitCode(await run(io, clusterStatusRequest(argv))),
  };
}
