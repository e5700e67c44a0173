/**
 * The command-line options of every command that talks to the admin API. Kept apart from the admin client so
 * that declaring the commands (help, parsing) loads neither the config reader nor the HTTP client.
 */
import type { Argv } from 'yargs';
import type { OptionTable } from './option-table.js';

export const ADMIN_URL_ENV = 'AGENT_ADMIN_URL';

/** The options of every command that talks to the admin API: where it is, and JSON output. */
export interface AdminClientArgs {
  'admin-url'?: string;
  'config-dir': string;
  json: boolean;
}

export const ADMIN_CLIENT_OPTIONS = {
  'admin-url': {
    type: 'string',
    requiresArg: true,
    describe: `Admin server URL (default: ${ADMIN_URL_ENV}, else runtime.yaml admin.listen)`,
  },
  'config-dir': {
    type: 'string',
    requiresArg: true,
    default: './config',
    describe: 'Config directory whose runtime.yaml names the admin server',
  },
  json: { type: 'boolean', default: false, describe: 'Print the API answer as JSON' },
} as const satisfies OptionTable;

export function adminClientOptions(y: Argv): Argv<AdminClientArgs> {
  return y.options(ADMIN_CLIENT_OPTIONS) as unknown as Argv<AdminClientArgs>;
}
