import { createHash } from 'node:crypto';

// Pure helpers for `webhook_poll`: find the item array in a JSON response, give each item a dedup id, and
// expose item fields to the message template. Paths are dotted (`data.items`, `results.0.list`); a segment
// that is a non-negative integer indexes an array, any segment looks up an object's OWN key (never the
// prototype, so `constructor` or `__proto__` find nothing). Keys that contain a dot cannot be addressed.

/**
 * Stable codes of this module (returned, never thrown), with what each means and what to do about it.
 * @public Read from the build by scripts/gen-errors-doc.mjs (docs/errors.md).
 */
export const WEBHOOK_ERROR_CODES = {
  WEBHOOK_PATH_INVALID: {
    meaning: '`items_path` or `id_field` has an empty segment, or is not a string.',
    action: 'Fix the path in the job config (`data.items`).',
  },
  WEBHOOK_ITEMS_PATH_MISSING: {
    meaning:
      'The response has nothing at `items_path` (a key or an index is missing); the tick is Transient.',
    action: 'Check `items_path` against a real response; the server may have sent an error body.',
  },
  WEBHOOK_ITEMS_NOT_ARRAY: {
    meaning: 'Something is at `items_path`, but it is not an array; the tick is Transient.',
    action: 'Point `items_path` at the array itself.',
  },
} as const satisfies Record<string, { meaning: string; action: string }>;

type WebhookItemsErrorCode = keyof typeof WEBHOOK_ERROR_CODES;

export type ParsePathResult =
  { ok: true; segments: string[] } | { ok: false; code: 'WEBHOOK_PATH_INVALID'; error: string };

/** Ids longer than this are replaced by `h:` + their SHA-256 hex (keeps the seen-id store small). */
export const ITEM_ID_MAX_CHARS = 512;
const PATH_MAX_CHARS = 1_000;
const INDEX_RE = /^(?:0|[1-9]\d{0,15})$/;

/** Splits a dotted path. `""` is the root (no segments); empty segments (`a..b`, `.a`, `a.`) are invalid. */
export function parsePath(path: string): ParsePathResult {
  if (typeof path !== 'string') {
    return {
      ok: false,
      code: 'WEBHOOK_PATH_INVALID',
      error: 'the path must be a string such as "data.items"',
    };
  }
  const trimmed = path.trim();
  if (trimmed === '') return { ok: true, segments: [] };
  if (trimmed.length > PATH_MAX_CHARS) {
    return {
      ok: false,
      code: 'WEBHOOK_PATH_INVALID',
      error: `the path is longer than ${PATH_MAX_CHARS} characters`,
    };
  }
  const segments = trimmed.split('.').map((segment) => segment.trim());
  if (segments.some((segment) => segment === '')) {
    return {
      ok: false,
      code: 'WEBHOOK_PATH_INVALID',
      error: `"${trimmed}" has an empty segment; write dotted keys such as "data.items" or "results.0.list"`,
    };
  }
  return { ok: true, segments };
}

type Lookup = { found: true; value: unknown } | { found: false; reason: string };

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function formatPath(segments: readonly string[]): string {
  return segments.length === 0 ? 'the root' : segments.join('.');
}

/** Walks `segments` from `value`. Only own properties and in-range array indexes are followed. */
function lookup(value: unknown, segments: readonly string[]): Lookup {
  let current = value;
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index] as string;
    const where = formatPath(segments.slice(0, index));
    if (Array.isArray(current)) {
      if (!INDEX_RE.test(segment)) {
        return { found: false, reason: `${where} is an array, and "${segment}" is not an index` };
      }
      const position = Number(segment);
      if (position >= current.length) {
        return { found: false, reason: `${where} has ${current.length} elements, no index ${segment}` };
      }
      current = current[position];
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, segment)) {
        return { found: false, reason: `${where} has no key "${segment}"` };
      }
      current = (current as Record<string, unknown>)[segment];
    } else {
      return { found: false, reason: `${where} is ${describeType(current)}, not an object or array` };
    }
  }
  return { found: true, value: current };
}

export type GetAtPathResult =
  { ok: true; items: unknown[] } | { ok: false; code: WebhookItemsErrorCode; error: string };

/**
 * The array at `path` (`items_path`) inside a parsed JSON response. Errors say `not an array at <path>`
 * followed by what was found, so a wrong `items_path` is easy to fix.
 */
export function getAtPath(value: unknown, path: string): GetAtPathResult {
  const parsed = parsePath(path);
  if (!parsed.ok) return parsed;
  const where = formatPath(parsed.segments);
  const found = lookup(value, parsed.segments);
  if (!found.found) {
    return {
      ok: false,
      code: 'WEBHOOK_ITEMS_PATH_MISSING',
      error: `not an array at ${where}: ${found.reason}`,
    };
  }
  if (!Array.isArray(found.value)) {
    return {
      ok: false,
      code: 'WEBHOOK_ITEMS_NOT_ARRAY',
      error: `not an array at ${where}: found ${describeType(found.value)}; check items_path`,
    };
  }
  return { ok: true, items: found.value };
}

/** Why an item has no usable id. */
type ItemIdProblem = 'invalid_path' | 'missing' | 'empty' | 'not_scalar' | 'not_integer' | 'unsafe_integer';

export type ResolveItemIdResult =
  { ok: true; id: string } | { ok: false; problem: ItemIdProblem; message: string };

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The dedup id of one item, with the reason when there is none.
 * - Strings are used as they are (not trimmed), but an empty or whitespace-only string is no id.
 * - Integers within ±(2^53 − 1) become their decimal string, so `42` and `"42"` are the same id.
 * - Non-integer numbers are rejected (`1.5` is almost always a wrong `id_field`, and float formatting is
 *   a poor identity); integers beyond the safe range are rejected because JSON parsing already rounded them
 *   (ask the API for string ids).
 * - Booleans, null, objects, arrays and missing fields are rejected.
 * - `idField` `""` means the item itself (for responses that are a list of ids).
 * - Ids longer than {@link ITEM_ID_MAX_CHARS} are replaced by `h:` + their SHA-256 hex.
 */
export function resolveItemId(item: unknown, idField: string): ResolveItemIdResult {
  const parsed = parsePath(idField);
  if (!parsed.ok) return { ok: false, problem: 'invalid_path', message: parsed.error };
  return idAt(item, parsed.segments);
}

/** `resolveItemId` with the path already split (a response resolves thousands of ids with one path). */
function idAt(item: unknown, segments: readonly string[]): ResolveItemIdResult {
  const field = segments.length === 0 ? 'the item' : `id_field "${segments.join('.')}"`;
  const found = lookup(item, segments);
  if (!found.found) return { ok: false, problem: 'missing', message: `${field} is missing: ${found.reason}` };
  const value = found.value;
  let id: string;
  if (typeof value === 'string') {
    if (value.trim() === '') return { ok: false, problem: 'empty', message: `${field} is an empty string` };
    id = value;
  } else if (typeof value === 'number') {
    if (!Number.isInteger(value)) {
      return {
        ok: false,
        problem: 'not_integer',
        message: `${field} is ${value}, not an integer or a string`,
      };
    }
    if (!Number.isSafeInteger(value)) {
      return {
        ok: false,
        problem: 'unsafe_integer',
        message: `${field} is an integer too large to be exact in JSON; the API should send it as a string`,
      };
    }
    id = String(value); // also turns -0 into "0"
  } else {
    return {
      ok: false,
      problem: 'not_scalar',
      message: `${field} is ${describeType(value)}; it must be a string or an integer`,
    };
  }
  return { ok: true, id: id.length > ITEM_ID_MAX_CHARS ? `h:${sha256(id)}` : id };
}

/** The dedup id of one item, or `null` when it has none (the caller skips the item with a warning). */
export function itemId(item: unknown, idField: string): string | null {
  const result = resolveItemId(item, idField);
  return result.ok ? result.id : null;
}

/**
 * A value as template text: strings as they are, numbers and booleans via `String`, `null` as `""`,
 * objects and arrays as compact JSON.
 */
export function renderFieldValue(value: unknown): string | undefined {
  if (value === null) return '';
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      try {
        return JSON.stringify(value);
      } catch {
        return undefined; // not JSON data (cyclic); cannot happen for a parsed response
      }
    default:
      return undefined;
  }
}

/**
 * Placeholder lookup for the runner's template renderer: `{user.name}`, `{tags.0}` are dotted paths into
 * the item. Returns `undefined` when the path does not exist (or is not a valid path, or is empty).
 * The renderer inserts the value literally and never expands it again.
 */
export function webhookFieldLookup(item: unknown): (placeholder: string) => string | undefined {
  return (placeholder) => {
    if (typeof placeholder !== 'string' || placeholder.trim() === '') return undefined;
    const parsed = parsePath(placeholder);
    if (!parsed.ok) return undefined;
    const found = lookup(item, parsed.segments);
    return found.found ? renderFieldValue(found.value) : undefined;
  };
}

interface SelectedItem {
  id: string;
  item: unknown;
}

interface SkippedItem {
  /** Position in the response array. */
  index: number;
  problem: ItemIdProblem;
  message: string;
}

export type SelectItemsResult =
  | {
      ok: true;
      /** Items with an id, in response order, first occurrence of each id only. */
      items: SelectedItem[];
      /** Items without a usable id: log a warning and count them. */
      skipped: SkippedItem[];
      /** How many later items repeated an id already seen in this response (dispatched once). */
      duplicates: number;
      /** Items before the last `maxItems` of the array, left out without looking at them (absent: none). */
      dropped?: number;
    }
  | { ok: false; code: WebhookItemsErrorCode; error: string };

/**
 * `getAtPath` + `resolveItemId` for a whole response: the items to consider for dispatch. With `maxItems`,
 * only the last `maxItems` elements of the array (the newest, in the oldest-first order a response is read
 * in) are looked at; the others are counted in `dropped`.
 */
export function selectItems(
  response: unknown,
  options: { itemsPath: string; idField: string; maxItems?: number },
): SelectItemsResult {
  const array = getAtPath(response, options.itemsPath);
  if (!array.ok) return array;
  const idPath = parsePath(options.idField);
  if (!idPath.ok) return idPath;
  const items: SelectedItem[] = [];
  const skipped: SkippedItem[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  const all = array.items;
  const first = options.maxItems === undefined ? 0 : Math.max(0, all.length - options.maxItems);
  for (let index = first; index < all.length; index++) {
    const item = all[index];
    const id = idAt(item, idPath.segments);
    if (!id.ok) {
      skipped.push({ index, problem: id.problem, message: id.message });
    } else if (seen.has(id.id)) {
      duplicates++;
    } else {
      seen.add(id.id);
      items.push({ id: id.id, item });
    }
  }
  return { ok: true, items, skipped, duplicates, ...(first > 0 ? { dropped: first } : {}) };
}
