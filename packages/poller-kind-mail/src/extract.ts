/**
 * `extract`: name -> regex, capture group 1 on the decoded text. Patterns are compiled at validation.
 * Input is capped, and each match runs under a time limit, so a catastrophic pattern cannot stall a tick.
 */
import vm from 'node:vm';

/** Characters of decoded text a pattern sees at most. */
export const EXTRACT_INPUT_MAX_CHARS = 20_000;
/** Time one pattern may run on one message. */
const EXTRACT_TIMEOUT_MS = 100;

const INLINE_FLAGS = /^\(\?([ims]+)\)/;

/** Compiles a pattern; a leading `(?i)`, `(?m)`, `(?s)` (or a mix) sets flags. Throws `SyntaxError`. */
export function compilePattern(pattern: string): RegExp {
  const m = INLINE_FLAGS.exec(pattern);
  const flags = m ? [...new Set(m[1]!)].join('') : '';
  return new RegExp(m ? pattern.slice(m[0].length) : pattern, flags);
}

/** Problems of an `extract` map: invalid patterns, names that are not placeholder names. */
export function extractProblems(
  extract: Readonly<Record<string, string>>,
  reserved: readonly string[],
): string[] {
  const out: string[] = [];
  for (const [name, pattern] of Object.entries(extract)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      out.push(`extract name "${name}" must be letters, digits and underscores (it becomes {${name}})`);
    if (reserved.includes(name))
      out.push(`extract name "${name}" is a built-in placeholder; choose another name`);
    try {
      compilePattern(pattern);
    } catch (err) {
      out.push(`extract "${name}": invalid regex: ${(err as Error).message}`);
    }
  }
  return out;
}

let sandbox: vm.Context | null = null;
const run = new vm.Script('re.exec(input)');

export type ExtractResult = { value: string } | { value: undefined; timedOut: boolean };

/** Capture group 1 of `re` on `text` (trimmed); `undefined` when it does not match or group 1 is empty. */
export function extractOne(re: RegExp, text: string): ExtractResult {
  sandbox ??= vm.createContext({});
  const fresh = new RegExp(re.source, re.flags.replace('g', '').replace('y', ''));
  sandbox.re = fresh;
  sandbox.input = text.length > EXTRACT_INPUT_MAX_CHARS ? text.slice(0, EXTRACT_INPUT_MAX_CHARS) : text;
  try {
    const m = run.runInContext(sandbox, { timeout: EXTRACT_TIMEOUT_MS }) as RegExpExecArray | null;
    const v = m?.[1]?.trim();
    return v ? { value: v } : { value: undefined, timedOut: false };
  } catch {
    return { value: undefined, timedOut: true };
  } finally {
    sandbox.re = null;
    sandbox.input = null;
  }
}
