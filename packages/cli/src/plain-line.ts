/**
 * The client command lines operators type most (`agent pollers list`, `agent reload --json`, …), parsed
 * without yargs: importing yargs alone costs about twice a bare Node start, which a command that answers in a
 * few milliseconds should not pay. A line is plain when it is exactly a command's words, its positional, and
 * options of its own table each given once in their long form (`--json`, `--config-dir dir`,
 * `--config-dir=dir`). Anything else (help, `--version`, short or negated flags, camel case, `--`, a typo, a
 * missing value) is left to yargs, which gives the full parsing and the usage errors; the tests check that
 * both parsers give the same request, for every command and option, on a table of plain lines.
 */
import { parseArgs } from 'node:util';
import { ADMIN_CLIENT_OPTIONS } from './admin-options.js';
import type { ClientRequest } from './client-request.js';
import { clusterStatusRequest } from './cluster-command.js';
import type { OptionTable } from './option-table.js';
import {
  POLLERS_ACTIONS,
  pollersOptions,
  pollersRequest,
  pollersTakesId,
  type PollersArgv,
} from './pollers-command.js';
import { RELOAD_OPTIONS, reloadRequest, type ReloadArgs } from './reload-command.js';

export type PlainValues = Record<string, string | boolean>;

interface PlainCommand {
  words: readonly string[];
  /** The one positional after the words, if the command takes one. */
  positional?: string;
  options: OptionTable;
  request(values: PlainValues): ClientRequest;
}

const COMMANDS: readonly PlainCommand[] = [
  { words: ['reload'], options: RELOAD_OPTIONS, request: (v) => reloadRequest(v as unknown as ReloadArgs) },
  ...POLLERS_ACTIONS.map((action): PlainCommand => ({
    words: ['pollers', action],
    ...(pollersTakesId(action) ? { positional: 'id' } : {}),
    options: pollersOptions(action),
    request: (v) => pollersRequest(action, v as unknown as PollersArgv),
  })),
  {
    words: ['cluster', 'status'],
    options: ADMIN_CLIENT_OPTIONS,
    request: (v) => clusterStatusRequest(v as never),
  },
];

/** The request of a plain client command line; undefined when the line is for yargs to parse. */
export function plainLineRequest(args: readonly string[]): ClientRequest | undefined {
  const command = COMMANDS.find((c) => c.words.every((w, i) => args[i] === w));
  if (command === undefined) return undefined;
  const values = plainValues(args.slice(command.words.length), command);
  return values && command.request(values);
}

/**
 * The option values (defaults filled in) and the positional of a plain line after its command words, or
 * undefined when the line is not plain. For other programs' lines of the same kind (the daemon's own).
 */
export function plainValues(
  rest: readonly string[],
  command: { options: OptionTable; positional?: string },
): PlainValues | undefined {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...rest],
      options: Object.fromEntries(Object.entries(command.options).map(([k, o]) => [k, { type: o.type }])),
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
  } catch {
    return undefined;
  }
  const seen = new Set<string>();
  for (const t of parsed.tokens) {
    if (t.kind === 'option-terminator') return undefined;
    if (t.kind !== 'option') continue;
    // A repeated option is an array to yargs; a value that looks like a flag or is empty is an error there.
    if (seen.has(t.name) || (t.value !== undefined && (t.value === '' || t.value.startsWith('-'))))
      return undefined;
    const choices = command.options[t.name]?.choices;
    if (choices && !choices.includes(t.value ?? '')) return undefined;
    seen.add(t.name);
  }
  const wanted = command.positional === undefined ? 0 : 1;
  if (parsed.positionals.length !== wanted) return undefined;
  const values: PlainValues = {};
  for (const [name, spec] of Object.entries(command.options))
    if (spec.default !== undefined) values[name] = spec.default;
  Object.assign(values, parsed.values);
  if (command.positional !== undefined) values[command.positional] = parsed.positionals[0]!;
  return values;
}
