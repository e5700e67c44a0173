/**
 * Usage errors of the `agent` command line: exit 2 (GNU and argparse convention) with what is wrong, a
 * "did you mean" for a mistyped command, and where the help is, instead of the whole help text.
 */

export const USAGE_EXIT_CODE = 2;

/** Thrown from yargs' `fail` callback; `bin.ts` prints it and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Command words: the top-level commands, each with its sub-commands. */
export type CommandTree = Readonly<Record<string, readonly string[]>>;

/** Options that take a value: the word after them is not a command. */
const VALUE_OPTIONS = new Set(['--config-dir', '--admin-url', '--log-format', '--log-level']);

function words(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') break;
    if (a.startsWith('-')) {
      if (VALUE_OPTIONS.has(a)) i++;
      continue;
    }
    out.push(a);
  }
  return out;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const keep = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = keep;
    }
  }
  return row[b.length]!;
}

/** The closest name within two edits, if any. */
function closest(word: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const n of names) {
    const d = distance(word.toLowerCase(), n);
    if (d < bestD) [best, bestD] = [n, d];
  }
  return best;
}

function unknown(word: string, names: readonly string[], where: string): string {
  const near = closest(word, names);
  return `unknown command "${word}"${where}${near ? `; did you mean "${near}"?` : ''}`;
}

/**
 * The lines to print for a usage error: yargs' message (or an unknown command with its suggestion), then the
 * help command of the deepest command the user named.
 */
export function usageErrorLines(message: string, args: readonly string[], tree: CommandTree): string[] {
  const w = words(args);
  const path: string[] = [];
  let problem = message;
  const top = w[0];
  if (top !== undefined) {
    const subs = tree[top];
    if (!subs) problem = unknown(top, Object.keys(tree), '');
    else {
      path.push(top);
      const sub = w[1];
      if (sub !== undefined && subs.length > 0) {
        if (subs.includes(sub)) path.push(sub);
        else problem = unknown(sub, subs, ` for agent ${top}`);
      }
    }
  }
  if (problem.startsWith('Not enough non-option arguments')) {
    const subs = path.length === 1 ? (tree[path[0]!] ?? []) : [];
    problem = `${
      subs.length > 0
        ? `missing a command for agent ${path[0]}: one of ${subs.join(', ')}`
        : `missing an argument for ${['agent', ...path].join(' ')}`
    } (${problem})`;
  }
  return [`agent: ${problem}`, `Run "${['agent', ...path, '--help'].join(' ')}" for usage.`];
}
