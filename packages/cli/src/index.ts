import type { CommandModule } from 'yargs';
import type { CliIO } from './io.js';
import { reloadCommand } from './reload.js';

export { processIO, type CliIO } from './io.js';
export {
  formatReloadAck,
  NO_ACK_MESSAGE,
  RELOAD_ACK_SUBJECT,
  RELOAD_ACK_TIMEOUT_MS,
  RELOAD_SUBJECT,
  reloadCommand,
  reloadExitCode,
  runReload,
  type ReloadAck,
} from './reload.js';

/** Every client command, for the `agent` bin to mount. */
export function cliCommands(io: CliIO): CommandModule<any, any>[] {
  return [reloadCommand(io)];
}
