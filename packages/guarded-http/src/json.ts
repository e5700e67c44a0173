/**
 * JSON of a response, bounded. A depth cap first: `JSON.parse` itself copes with deep nesting, but every
 * recursive walker after it (`JSON.stringify`, template rendering) dies with "Maximum call stack size
 * exceeded". And `parseJsonAsync` for large bodies: one `JSON.parse` of 10 MB blocks the event loop for
 * about 150 ms, so the text is indexed in slices first and then built in slices, with every small container
 * (the items of a list) handed to `JSON.parse` whole.
 */
import { timeSlicer, type TimeSlicer } from '@agent/timers';
import { GuardedHttpError } from './errors.js';

/** Nesting levels (objects and arrays) a parsed body may have by default. */
export const DEFAULT_JSON_MAX_DEPTH = 64;

export interface JsonLimits {
  /** Objects and arrays nested deeper than this are refused with `HTTP_JSON_TOO_DEEP`. Default 64. */
  maxDepth?: number;
}

export interface AsyncJsonOptions extends JsonLimits {
  /** Work between two yields to the event loop, in ms. Default 8. */
  sliceMs?: number;
  /** Containers up to this many characters go to one `JSON.parse` whole. Default 32 KiB. */
  leafChars?: number;
}

// Containers up to this many characters are parsed by one `JSON.parse` (well under a millisecond).
const LEAF_CHARS = 32 * 1024;
// How many characters or values pass between two looks at the clock.
const CLOCK_EVERY = 4096;

const enum Ch {
  Quote = 34,
  Comma = 44,
  Colon = 58,
  OpenBracket = 91,
  Backslash = 92,
  CloseBracket = 93,
  OpenBrace = 123,
  CloseBrace = 125,
}

function tooDeep(maxDepth: number, at: number): GuardedHttpError {
  return new GuardedHttpError(
    'HTTP_JSON_TOO_DEEP',
    `JSON nests deeper than ${maxDepth} levels (objects and arrays, at character ${at}); such a body is refused`,
  );
}

function invalid(at: number, detail?: string): GuardedHttpError {
  return new GuardedHttpError(
    'HTTP_INVALID_JSON',
    `not valid JSON (at character ${at}${detail ? `: ${detail}` : ''})`,
  );
}

/** The index of the quote that ends the string opened at `open`, or -1. */
function stringEnd(text: string, open: number): number {
  let j = text.indexOf('"', open + 1);
  while (j !== -1) {
    let k = j - 1;
    while (text.charCodeAt(k) === Ch.Backslash) k--;
    if ((j - 1 - k) % 2 === 0) return j; // an even run of backslashes escapes nothing
    j = text.indexOf('"', j + 1);
  }
  return -1;
}

/**
 * Pass 1: where every object and array starts and ends (document order), refusing too deep nesting and
 * unbalanced brackets. Resumable, so the async parser can run it in slices.
 */
class StructureScan {
  starts = new Int32Array(1024);
  ends = new Int32Array(1024);
  count = 0;
  private pos = 0;
  private readonly stack: Int32Array;
  private depth = 0;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {
    this.stack = new Int32Array(maxDepth + 1);
  }

  /** Scans until the end (true) or until `due()` says the slice is over (false). */
  run(due: () => boolean): boolean {
    const { text } = this;
    const n = text.length;
    let i = this.pos;
    let next = i + CLOCK_EVERY;
    while (i < n) {
      if (i >= next) {
        next = i + CLOCK_EVERY;
        if (due()) {
          this.pos = i;
          return false;
        }
      }
      const c = text.charCodeAt(i);
      if (c === Ch.Quote) {
        const end = stringEnd(text, i);
        if (end === -1) throw invalid(i, 'a string is not closed');
        i = end + 1;
        continue;
      }
      if (c === Ch.OpenBrace || c === Ch.OpenBracket) {
        if (this.depth >= this.maxDepth) throw tooDeep(this.maxDepth, i);
        if (this.count === this.starts.length) this.grow();
        this.starts[this.count] = i;
        this.ends[this.count] = -1;
        this.stack[this.depth++] = this.count++;
      } else if (c === Ch.CloseBrace || c === Ch.CloseBracket) {
        if (this.depth === 0) throw invalid(i, 'a bracket closes nothing');
        const k = this.stack[--this.depth]!;
        const open = text.charCodeAt(this.starts[k]!);
        if ((c === Ch.CloseBrace) !== (open === Ch.OpenBrace)) throw invalid(i, 'brackets do not match');
        this.ends[k] = i;
      }
      i++;
    }
    this.pos = n;
    if (this.depth > 0) throw invalid(n, 'the text ends inside an object or array');
    return true;
  }

  private grow(): void {
    const starts = new Int32Array(this.starts.length * 2);
    const ends = new Int32Array(this.ends.length * 2);
    starts.set(this.starts);
    ends.set(this.ends);
    this.starts = starts;
    this.ends = ends;
  }
}

/** Refuses nesting deeper than `maxDepth` (and unbalanced brackets) without building anything. */
export function checkJsonDepth(text: string, maxDepth = DEFAULT_JSON_MAX_DEPTH): void {
  new StructureScan(text, maxDepth).run(() => false);
}

/** `JSON.parse` with the depth cap. Throws `HTTP_JSON_TOO_DEEP` or `HTTP_INVALID_JSON`. */
export function parseJson(text: string, limits: JsonLimits = {}): unknown {
  checkJsonDepth(text, limits.maxDepth ?? DEFAULT_JSON_MAX_DEPTH);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw Object.assign(invalid(0, (err as Error).message), { cause: err });
  }
}

function isWs(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

interface Frame {
  value: unknown[] | Record<string, unknown>;
  array: boolean;
  /** Index of the closing bracket. */
  end: number;
  key: string;
}

function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  // `JSON.parse` makes `__proto__` an own property; an assignment would set the prototype.
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/**
 * Parses like `JSON.parse` (same values, `__proto__` an own key, last duplicate key wins) with the depth cap,
 * yielding to the event loop every `sliceMs` of work. Throws `HTTP_JSON_TOO_DEEP` or `HTTP_INVALID_JSON`.
 */
export async function parseJsonAsync(text: string, options: AsyncJsonOptions = {}): Promise<unknown> {
  const maxDepth = options.maxDepth ?? DEFAULT_JSON_MAX_DEPTH;
  const leafChars = options.leafChars ?? LEAF_CHARS;
  const slicer: TimeSlicer = timeSlicer(options.sliceMs ?? 8);
  const scan = new StructureScan(text, maxDepth);
  while (!scan.run(slicer.due)) await slicer.maybeYield();
  const { starts, ends, count } = scan;
  const n = text.length;

  const ws = (p: number): number => {
    while (p < n && isWs(text.charCodeAt(p))) p++;
    return p;
  };
  const leaf = (from: number, to: number): unknown => {
    try {
      return JSON.parse(text.slice(from, to));
    } catch (err) {
      throw Object.assign(invalid(from, (err as Error).message), { cause: err });
    }
  };
  const primitiveEnd = (p: number): number => {
    if (text.charCodeAt(p) === Ch.Quote) return stringEnd(text, p) + 1;
    let q = p;
    while (q < n) {
      const c = text.charCodeAt(q);
      if (c === Ch.Comma || c === Ch.CloseBracket || c === Ch.CloseBrace || isWs(c)) break;
      q++;
    }
    return q;
  };
  const readKey = (p: number): [string, number] => {
    if (text.charCodeAt(p) !== Ch.Quote) throw invalid(p, 'expected a key in quotes');
    const end = stringEnd(text, p) + 1;
    const key = leaf(p, end) as string;
    const colon = ws(end);
    if (text.charCodeAt(colon) !== Ch.Colon) throw invalid(colon, 'expected ":"');
    return [key, ws(colon + 1)];
  };

  const stack: Frame[] = [];
  let k = 0; // the next container in document order
  let p = ws(0);
  let root: unknown;
  let steps = 0;
  for (;;) {
    if (++steps % 256 === 0) await slicer.maybeYield();
    if (p >= n) throw invalid(p, 'expected a value');
    // One value at p: a leaf, a primitive, or a large container whose children follow.
    let value: unknown;
    const c = text.charCodeAt(p);
    if (c === Ch.OpenBrace || c === Ch.OpenBracket) {
      if (k >= count || starts[k] !== p) throw invalid(p);
      const end = ends[k]!;
      if (end - p < leafChars) {
        value = leaf(p, end + 1);
        k++;
        while (k < count && starts[k]! < end) k++;
        p = end + 1;
      } else {
        k++;
        const array = c === Ch.OpenBracket;
        const frame: Frame = { value: array ? [] : {}, array, end, key: '' };
        stack.push(frame);
        p = ws(p + 1);
        if (p === end) {
          // Empty, with enough whitespace inside to be large.
          stack.pop();
          value = frame.value;
          p = end + 1;
        } else {
          if (!array) [frame.key, p] = readKey(p);
          continue;
        }
      }
    } else {
      const end = primitiveEnd(p);
      if (end <= p) throw invalid(p, 'expected a value');
      value = leaf(p, end);
      p = end;
    }
    // Hand the value to its container; close every container that ends here.
    for (;;) {
      const top = stack.at(-1);
      if (!top) {
        root = value;
        break;
      }
      if (top.array) (top.value as unknown[]).push(value);
      else setKey(top.value as Record<string, unknown>, top.key, value);
      p = ws(p);
      const sep = text.charCodeAt(p);
      if (sep === Ch.Comma && p < top.end) {
        p = ws(p + 1);
        if (!top.array) [top.key, p] = readKey(p);
        break;
      }
      if (p !== top.end) throw invalid(p, 'expected "," or the end of the object or array');
      stack.pop();
      value = top.value;
      p += 1;
    }
    if (stack.length === 0) break;
  }
  if (ws(p) !== n) throw invalid(ws(p), 'unexpected text after the value');
  return root;
}
