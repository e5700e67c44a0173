/**
 * `@agent/cli/commands`: what the `agent` bin mounts, and nothing else. Declaring a command loads only its
 * options and help; the client that runs it (config reader, HTTP or broker client, renderers) is imported when
 * the command runs, so that each command pays only for itself. A plain command line skips yargs altogether
 * (`plainLineRequest`).
 */
import type { CommandModule } from 'yargs';
import { runClient, type ClientRunner } from './client-request.js';
import { clusterCommand } from './cluster-command.js';
import type { CliIO } from './io.js';
import { pollersCommand } from './pollers-command.js';
import { reloadCommand } from './reload-command.js';

export { keepRunningOnClosedStdout, processIO, type CliIO } from './io.js';
export { POLLERS_ACTIONS } from './pollers-command.js';
export { runClient, type ClientRequest, type ClientRunner } from './client-request.js';
export { plainLineRequest, plainValues, type PlainValues } from './plain-line.js';
export type { OptionTable } from './option-table.js';

/** Every client command, for the `agent` bin to mount; `run` runs what a command line asks for. */
export function cliCommands(io: CliIO, run: ClientRunner = runClient): CommandModule<any, any>[] {
  return [reloadCommand(io, run), pollersCommand(io, run), clusterCommand(io, run)];
}
