/**
 * What a client command line asks for, as plain data, and the one place that runs it. Both parsers (yargs for
 * every command line, the plain-line parser for the common ones) end here, so that a command does the same
 * whichever parsed it. Each client module is imported only when its command runs.
 */
import type { CliIO } from './io.js';
import type { PollersArgs } from './pollers.js';

interface ReloadRequestArgs {
  configDir: string;
  json: boolean;
  dryRun: boolean;
}

interface ClusterStatusRequestArgs {
  adminUrl?: string;
  configDir: string;
  json: boolean;
}

export type ClientRequest =
  | { command: 'pollers'; args: PollersArgs }
  | { command: 'reload'; args: ReloadRequestArgs }
  | { command: 'cluster status'; args: ClusterStatusRequestArgs };

/** Runs a request; resolves to the exit code. */
export type ClientRunner = (io: CliIO, request: ClientRequest) => Promise<number>;

export const runClient: ClientRunner = async (io, request) => {
  switch (request.command) {
    case 'pollers': {
      const { runPollers } = await import('./pollers.js');
      return runPollers(io, request.args);
    }
    case 'reload': {
      const { runReload } = await import('./reload.js');
      return runReload(io, request.args);
    }
    case 'cluster status': {
      const { runClusterStatus } = await import('./cluster.js');
      return runClusterStatus(io, request.args);
    }
  }
};
