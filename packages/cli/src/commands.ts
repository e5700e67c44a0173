/**
 * `@agent/cli/commands`: what the `agent` bin mounts, and nothing else. Declaring a command loads only its
 * options and help; the client that runs it (config reader, HTTP or broker client, renderers) is imported when
 * the command runs, so that each command pays only for itself.
 */
import type { CommandModule } from 'yargs';
import { clusterCommand } from './cluster-command.js';
import type { CliIO } from './io.js';
import { pollersCommand } from './pollers-command.js';
import { reloadCommand } from './reload-command.js';

export { keepRunningOnClosedStdout, processIO, type CliIO } from './io.js';
export { POLLERS_ACTIONS } from './pollers-command.js';

/** Every client command, for the `agent` bin to mount. */
export function cliCommands(io: CliIO): CommandModule<any, any>[] {
  return [reloadCommand(io), pollersCommand(io), clusterCommand(io)];
}
