/** Schema validation, turning the validator's errors into issues that name the YAML path and a fix. */
import { compileSchema, type ErrorObject } from '@agent/json-schema';
import type { ConfigIssue } from './issues.js';
import { RECIPIENT_PATTERN } from './schemas.js';
import { issueAt, type IssueInput, type Segments, type SourceFile } from './source.js';

/**
 * Validates `value` (mutated: defaults are filled in) against `schema`. `base` is where `value` sits in
 * the file. Returns one issue per problem, located in the YAML source.
 */
/** A failed `oneOf` of keyed branches (each branch requires one key), as the validator understood it. */
export interface OneOfFailure {
  /** The key each branch requires. */
  branches: string[];
  /** The branch keys the value has. */
  given: string[];
  /** With one branch key given: the other keys beside it, and its value. */
  extra: string[];
  bad?: unknown;
}

export interface ValidateOptions {
  /** Words for a failed `oneOf` (the owner of the schema knows what its branches mean). */
  explainOneOf?: (f: OneOfFailure) => { code: string; message: string; hint?: string };
}

export function validateAt(
  schema: object,
  value: unknown,
  src: Pick<SourceFile, 'display' | 'locate'>,
  base: Segments,
  ctx: Omit<IssueInput, 'code' | 'message'>,
  options: ValidateOptions = {},
): ConfigIssue[] {
  const fn = compileSchema(schema);
  if (fn(value)) return [];
  return translate(fn.errors ?? [], value, src, base, ctx, options);
}

const CLIP = 40;

/** A name as shown in a message: long ones cut, so that an over-long key cannot flood a log line. */
function clip(name: string): string {
  return name.length <= CLIP ? name : `${name.slice(0, CLIP)}…`;
}

function pointerToSegments(pointer: string, value: unknown): (string | number)[] {
  if (!pointer) return [];
  const out: (string | number)[] = [];
  let cur: unknown = value;
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const key: string | number = Array.isArray(cur) && /^\d+$/.test(seg) ? Number(seg) : seg;
    out.push(key);
    cur =
      cur !== null && typeof cur === 'object' ? (cur as Record<string | number, unknown>)[key] : undefined;
  }
  return out;
}

function translate(
  errors: ErrorObject[],
  value: unknown,
  src: Pick<SourceFile, 'display' | 'locate'>,
  base: Segments,
  ctx: Omit<IssueInput, 'code' | 'message'>,
  options: ValidateOptions,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Set<string>();
  const oneOfPaths = new Set(errors.filter((e) => e.keyword === 'oneOf').map((e) => e.instancePath));
  for (const e of errors) {
    // Branch errors of a `oneOf` are noise; the `oneOf` error itself is explained once below.
    const inOneOf = [...oneOfPaths].some(
      (p) => e.instancePath.startsWith(p) && e.schemaPath.includes('/oneOf/'),
    );
    if (inOneOf || e.keyword === 'if') continue;
    const segs = [...base, ...pointerToSegments(e.instancePath, value)];
    let input: Omit<IssueInput, 'scope'>;
    let key: string | undefined;
    switch (e.keyword) {
      case 'additionalProperties': {
        key = String((e.params as { additionalProperty: string }).additionalProperty);
        const allowed = Object.keys((e.parentSchema as { properties?: object }).properties ?? {});
        input = {
          code: 'CONFIG_UNKNOWN_KEY',
          message: `unknown key "${clip(key)}"`,
          hint: allowed.length ? `remove it, or use one of: ${allowed.join(', ')}` : 'remove it',
        };
        break;
      }
      case 'required': {
        const missing = String((e.params as { missingProperty: string }).missingProperty);
        input = {
          code: 'CONFIG_MISSING_KEY',
          message: `missing required key "${missing}"`,
          hint: `add "${missing}"`,
        };
        break;
      }
      case 'oneOf': {
        const explained = oneOfMessage(e, value, options);
        input = explained.input;
        // Point at the branch key that is wrong, not only at the object that holds it.
        if (explained.at) segs.push(explained.at);
        break;
      }
      case 'enum': {
        const allowed = (e.params as { allowedValues: unknown[] }).allowedValues
          .map((v) => JSON.stringify(v))
          .join(', ');
        input = { code: 'CONFIG_INVALID_VALUE', message: `must be one of ${allowed}` };
        break;
      }
      case 'propertyNames':
        continue; // reported by the nested `pattern` error with the offending name
      case 'pattern': {
        const name = e.propertyName;
        // A bad name is located at itself, not at the map that holds it.
        key = name;
        input = name
          ? {
              code: 'CONFIG_INVALID_VALUE',
              message: `name "${clip(name)}" must match ${(e.params as { pattern: string }).pattern}`,
            }
          : {
              code: 'CONFIG_INVALID_VALUE',
              message:
                (e.params as { pattern: string }).pattern === RECIPIENT_PATTERN
                  ? 'must not contain control characters (line breaks, tabs)'
                  : `must match ${(e.params as { pattern: string }).pattern}`,
            };
        break;
      }
      case 'maxLength': {
        // Never the value itself: it is what is too long (and may be a secret).
        const limit = (e.params as { limit: number }).limit;
        const name = e.propertyName;
        key = name;
        const length = name ?? (typeof e.data === 'string' ? e.data : '');
        input = {
          code: 'CONFIG_INVALID_VALUE',
          message: `${name === undefined ? '' : `name "${clip(name)}" `}is ${[...length].length} characters long; at most ${limit} are allowed`,
        };
        break;
      }
      default:
        input = { code: 'CONFIG_INVALID_VALUE', message: e.message ?? 'invalid value' };
    }
    const issue = issueAt(src, segs, { ...ctx, ...input }, key);
    const dedupe = `${issue.path}|${issue.message}`;
    if (!seen.has(dedupe)) {
      seen.add(dedupe);
      issues.push(issue);
    }
  }
  // Source order reads best.
  return issues.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}

// Explains a failed `oneOf` of keyed branches: which keys were expected and which were given.
function oneOfMessage(
  e: ErrorObject,
  root: unknown,
  options: ValidateOptions,
): { input: Omit<IssueInput, 'scope'>; at?: string } {
  const target = pointerToSegments(e.instancePath, root).reduce<unknown>(
    (cur, k) =>
      cur !== null && typeof cur === 'object' ? (cur as Record<string | number, unknown>)[k] : undefined,
    root,
  );
  const branches = (e.schema as { required?: string[] }[])
    .map((b) => b.required?.[0])
    .filter((k): k is string => !!k);
  const given =
    target && typeof target === 'object' ? Object.keys(target).filter((k) => branches.includes(k)) : [];
  const one = given.length === 1 ? given[0]! : undefined;
  const failure: OneOfFailure = {
    branches,
    given,
    extra: one ? Object.keys(target as object).filter((k) => !branches.includes(k)) : [],
    ...(one ? { bad: (target as Record<string, unknown>)[one] } : {}),
  };
  const at = one ? { at: one } : {};
  if (options.explainOneOf) return { input: options.explainOneOf(failure), ...at };
  if (one)
    return {
      input: {
        code: 'CONFIG_INVALID_VALUE',
        message: `invalid "${one}"${failure.extra.length ? `: ${failure.extra.map((k) => `"${k}"`).join(', ')} not allowed with it` : ''}`,
      },
      ...at,
    };
  return {
    input: {
      code: 'CONFIG_INVALID_VALUE',
      message:
        given.length === 0
          ? `needs exactly one of ${branches.join(', ')}`
          : `has ${given.join(' and ')}; exactly one of ${branches.join(', ')} is allowed`,
      hint: `keep exactly one of ${branches.join(', ')}`,
    },
  };
}
