/** Reading one YAML file with positions, so every issue can name its line and column. */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readSync,
  statSync,
  type BigIntStats,
  type Stats,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CORE_SCHEMA, load as loadFast } from 'js-yaml';
import type * as Yaml from 'yaml';
import { setTimer, type TimerHandle } from '@agent/timers';
import { formatPath, type ConfigIssue, type ConfigIssueCode, type IssueScope } from './issues.js';

export type Segments = readonly (string | number)[];

let documentParser: typeof Yaml | undefined;

/**
 * The `yaml` document parser, loaded on first use (it is the same module an import would load). Only a file
 * js-yaml refuses, or an issue that needs its position, reads it: a client reading a valid `runtime.yaml`
 * (the CLI) never pays for loading it.
 */
function yaml(): typeof Yaml {
  return (documentParser ??= createRequire(import.meta.url)('yaml') as typeof Yaml);
}

export interface SourceFile {
  /** Path relative to the config dir, with `/` separators. */
  rel: string;
  /** Path shown in messages: the config dir as given, joined with `rel`. */
  display: string;
  abs: string;
  hash: string;
  value: unknown;
  /** Line and column (1-based) of the node at `segments`, or of the key `key` inside it. */
  locate(segments: Segments, key?: string): { line: number; column: number } | undefined;
}

export interface IssueInput {
  code: ConfigIssueCode | (string & {});
  scope: IssueScope;
  message: string;
  hint?: string;
  agentId?: string;
  jobId?: string;
  provider?: string;
  plugin?: string;
  section?: string;
  severity?: 'error' | 'warning';
}

export function issueAt(
  src: Pick<SourceFile, 'display' | 'locate'>,
  segments: Segments,
  input: IssueInput,
  key?: string,
): ConfigIssue {
  const pos = (key === undefined ? undefined : src.locate(segments, key)) ?? nearestPosition(src, segments);
  const issue: ConfigIssue = {
    severity: input.severity ?? 'error',
    file: src.display,
    path: formatPath(key === undefined ? segments : [...segments, key]),
    ...input,
  };
  if (pos) {
    issue.line = pos.line;
    issue.column = pos.column;
  }
  return issue;
}

/**
 * The position of the node at `segments`, else of its nearest ancestor still in the file, no shallower than
 * `minDepth` (0: the file's root; 1: a top-level key at least, never the file's start).
 */
export function nearestPosition(
  src: Pick<SourceFile, 'locate'>,
  segments: Segments,
  minDepth = 0,
): { line: number; column: number } | undefined {
  for (let n = segments.length; n >= minDepth; n--) {
    const pos = src.locate(segments.slice(0, n));
    if (pos) return pos;
  }
  return undefined;
}

/** A config file larger than this is refused before it is read (a section may set its own cap). */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Mappings and sequences nested deeper than this are refused (every walker after the parse recurses). */
export const MAX_YAML_DEPTH = 64;
/** A file with a syntax error goes through the slower document parser (for its messages) only below this. */
const DOCUMENT_PARSER_MAX_CHARS = 256 * 1024;
/** Reads of one file that may see it change before the file is reported as changing. */
const READ_ATTEMPTS = 3;
const MAX_CACHED_FILES = 4096;
/** Parsed files by content hash, least recently used first. Values are frozen: nobody may mutate them. */
const parsed = new Map<string, { value: unknown; locate: SourceFile['locate']; pass: number }>();
let readPass = 0;

/**
 * Starts a read of the whole config directory; the returned function ends it and drops every parsed file
 * the read did not use. The cache then holds the trees of the files as they are now (which the snapshot
 * references anyway), not of every version saved since the start: edits of a 4 MiB file would otherwise
 * keep one large tree each.
 */
export function beginReadPass(): () => void {
  const id = ++readPass;
  return () => {
    if (readPass !== id) return;
    for (const [hash, entry] of parsed) if (entry.pass !== id) parsed.delete(hash);
  };
}

/** How many parsed files the cache holds (tests). */
export function cachedParseCount(): number {
  return parsed.size;
}

export interface ReadFileOptions {
  /**
   * Wall-clock ms: a file whose status changed (ctime) after this is not parsed but reported as
   * `CONFIG_FILE_CHANGING`, so that a reload never reads a save still being written.
   */
  settledBefore?: number;
  /** The size cap of this file; `MAX_FILE_BYTES` when absent. */
  maxBytes?: number;
}

function fileTypeOf(st: Stats | BigIntStats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** Same inode, size and change times: nothing wrote to the file between the two. */
function sameFile(a: BigIntStats, b: BigIntStats): boolean {
  return (
    a.ino === b.ino &&
    a.dev === b.dev &&
    a.size === b.size &&
    a.mtimeNs === b.mtimeNs &&
    a.ctimeNs === b.ctimeNs
  );
}

type StableRead =
  | { ok: true; buf: Buffer; ctimeMs: number }
  | { ok: false; code: ConfigIssueCode; message: string; hint: string };

/**
 * Reads a file so that the bytes are one version of it: its status (inode, size, mtime, ctime) is taken
 * before the read, from the open descriptor after it and from the path again; a mismatch (an in-place write
 * or a rename during the read) reads again, up to `READ_ATTEMPTS` times. Only regular files are opened (a
 * FIFO would block the reload), and a file above the size cap is refused before it is read.
 */
function unreadable(err: unknown): StableRead {
  return {
    ok: false,
    code: 'CONFIG_FILE_UNREADABLE',
    message: `cannot read file: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    hint: 'check that the file exists and the daemon user may read it',
  };
}

function readStable(abs: string, cap: number): StableRead {
  for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
    let before: BigIntStats;
    try {
      before = statSync(abs, { bigint: true });
    } catch (err) {
      return unreadable(err);
    }
    if (!before.isFile())
      return {
        ok: false,
        code: 'CONFIG_FILE_UNREADABLE',
        message: `is ${fileTypeOf(before)}, not a regular file`,
        hint: 'replace it with a regular YAML file',
      };
    if (before.size > BigInt(cap)) return tooLarge(Number(before.size), cap);
    let buf: Buffer;
    let after: BigIntStats;
    let again: BigIntStats;
    try {
      // Non-blocking: if the path became a FIFO since the stat, the open does not wait for a writer.
      const fd = openSync(abs, constants.O_RDONLY | constants.O_NONBLOCK);
      try {
        const opened = fstatSync(fd, { bigint: true });
        if (!opened.isFile() || !sameFile(before, opened)) continue;
        // One byte more than the cap, to see a file that grew past it meanwhile.
        buf = Buffer.allocUnsafe(Math.min(Number(before.size), cap) + 1);
        let n = 0;
        for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, n);
        buf = buf.subarray(0, n);
        after = fstatSync(fd, { bigint: true });
      } finally {
        closeSync(fd);
      }
      again = statSync(abs, { bigint: true });
    } catch (err) {
      return unreadable(err);
    }
    if (buf.length > cap) return tooLarge(buf.length, cap);
    if (sameFile(before, after) && sameFile(after, again) && BigInt(buf.length) === after.size)
      return { ok: true, buf, ctimeMs: Number(after.ctimeNs / 1_000_000n) };
  }
  return {
    ok: false,
    code: 'CONFIG_FILE_CHANGING',
    message: `the file changed during each of ${READ_ATTEMPTS} reads; it was not used`,
    hint: 'run agent reload again once the save is done (the watcher reloads by itself after the last save)',
  };
}

function tooLarge(bytes: number, cap: number): StableRead {
  return {
    ok: false,
    code: 'CONFIG_FILE_TOO_LARGE',
    message: `file is ${bytes} bytes, larger than the ${cap}-byte cap (${cap / 1024 / 1024} MiB)`,
    hint:
      cap === MAX_FILE_BYTES
        ? 'split it (one agent per file in agents.d/) or remove what is not needed'
        : 'remove what is not needed',
  };
}

/**
 * Parses a YAML file. Returns the file, or issues when it cannot be read or parsed; never throws.
 * Aliases are capped so that an alias bomb cannot blow up memory; so are size and nesting.
 */
export function readYamlFile(
  configDir: string,
  rel: string,
  scope: IssueScope,
  extra: Partial<IssueInput> = {},
  options: ReadFileOptions = {},
): { src?: SourceFile; issues: ConfigIssue[] } {
  const abs = join(configDir, rel);
  const display = join(configDir, rel);
  const read = readStable(abs, options.maxBytes ?? MAX_FILE_BYTES);
  const fileIssue = (code: ConfigIssueCode, message: string, hint: string): ConfigIssue => ({
    code,
    severity: 'error',
    scope,
    file: display,
    path: '',
    message,
    hint,
    ...extra,
  });
  if (!read.ok) return { issues: [fileIssue(read.code, read.message, read.hint)] };
  // A change time more than a second ahead of this clock is a skewed clock (a network file system), not a
  // save in progress: such a file is read as it is.
  if (
    options.settledBefore !== undefined &&
    read.ctimeMs > options.settledBefore &&
    read.ctimeMs <= Date.now() + 1000
  )
    return {
      issues: [
        fileIssue(
          'CONFIG_FILE_CHANGING',
          'the file was saved a moment before this reload read it, so the save may still be in progress; it was not used',
          'run agent reload again (the watcher reloads by itself after the last save)',
        ),
      ],
    };
  return parseYamlText(read.buf.toString('utf8'), { rel, abs, display }, scope, extra);
}

export function parseYamlText(
  text: string,
  names: { rel: string; abs: string; display: string },
  scope: IssueScope,
  extra: Partial<IssueInput> = {},
): { src?: SourceFile; issues: ConfigIssue[] } {
  const hash = createHash('sha256').update(text).digest('hex');
  // Parsing is pure in the text and dominates load time; a reload re-parses only files that changed.
  const cached = parsed.get(hash);
  if (cached) {
    parsed.delete(hash);
    cached.pass = readPass;
    parsed.set(hash, cached);
    return { src: { ...names, hash, value: cached.value, locate: cached.locate }, issues: [] };
  }
  // Fast path: js-yaml builds plain values directly (a 2 MB pollers.yaml in ~0.2 s and ~10 MB, where the
  // document tree takes ~2 s and ~180 MB). Both read the YAML 1.2 core schema. Anything js-yaml refuses
  // goes through the `yaml` document parser, whose messages and positions the issues use.
  let value: unknown;
  const fast = parseFast(text);
  if (!fast.ok && fast.tooDeep) return { issues: [tooDeepIssue(names.display, scope, fast.mark, extra)] };
  if (fast.ok) {
    if (aliasesExplode(fast.value))
      return {
        issues: [
          syntaxIssue(
            names.display,
            scope,
            `aliases expand to more than ${ALIAS_EXPANSION_FACTOR} times the values written (a resource exhaustion pattern); write the values out`,
            undefined,
            extra,
          ),
        ],
      };
    value = fast.value;
  } else if (text.length > DOCUMENT_PARSER_MAX_CHARS) {
    // The document parser takes seconds and hundreds of MB on a large file: js-yaml's message will do.
    return { issues: [syntaxIssue(names.display, scope, fast.reason, fast.mark, extra)] };
  } else {
    // The document parser recurses without a limit: refuse deep nesting before it sees the text.
    const deep = deepNesting(text);
    if (deep) return { issues: [tooDeepIssue(names.display, scope, deep, extra)] };
    const slow = parseWithDocument(text, names.display, scope, extra);
    if (!slow.ok) return { issues: slow.issues };
    value = slow.value;
  }
  // The parsed document (a large tree) is not kept: positions are needed only for issues, so `locate`
  // parses the text again on first use. Snapshots of big files then hold their text, not their tree.
  const locate = lazyLocator(text);
  const frozen = freezeParsed(value ?? null, new Map());
  parsed.set(hash, { value: frozen, locate, pass: readPass });
  if (parsed.size > MAX_CACHED_FILES) parsed.delete(parsed.keys().next().value!);
  return { src: { ...names, hash, value: frozen, locate }, issues: [] };
}

type Mark = { line: number; column: number } | undefined;

/** Strings up to this length are shared by every value of a file that spells them alike. */
const SHARED_STRING_MAX_CHARS = 64;

/**
 * Freezes a parsed tree, every short string value replaced by the first one spelled alike: the parser makes
 * a string per occurrence, and a file of 10,000 jobs repeats its kind, agents, channels and templates in
 * each (about 0.1 KB a job, kept as long as the snapshot). Aliased nodes are walked once (frozen ones are
 * skipped), so an alias cycle ends too.
 */
function freezeParsed<T>(value: T, shared: Map<string, string>): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  const node = value as Record<string, unknown>;
  for (const key of Object.keys(node)) {
    const v = node[key];
    if (typeof v === 'string') {
      // Assigning an own `__proto__` key would call the prototype's setter instead: it keeps its string.
      if (v.length > SHARED_STRING_MAX_CHARS || key === '__proto__') continue;
      const first = shared.get(v);
      if (first === undefined) shared.set(v, v);
      else node[key] = first;
    } else freezeParsed(v, shared);
  }
  return Object.freeze(value);
}

function parseFast(
  text: string,
): { ok: true; value: unknown } | { ok: false; tooDeep: boolean; reason: string; mark: Mark } {
  try {
    return { ok: true, value: loadFast(text, { schema: CORE_SCHEMA, maxDepth: MAX_YAML_DEPTH }) };
  } catch (err) {
    const e = err as { reason?: unknown; mark?: { line?: unknown; column?: unknown } };
    const reason = typeof e.reason === 'string' ? e.reason : (err as Error).message;
    const mark =
      typeof e.mark?.line === 'number' && typeof e.mark.column === 'number'
        ? { line: e.mark.line + 1, column: e.mark.column + 1 }
        : undefined;
    // js-yaml's own nesting limit, set to ours above.
    return { ok: false, tooDeep: reason === `nesting exceeded maxDepth (${MAX_YAML_DEPTH})`, reason, mark };
  }
}

function tooDeepIssue(file: string, scope: IssueScope, mark: Mark, extra: Partial<IssueInput>): ConfigIssue {
  return {
    code: 'CONFIG_YAML_TOO_DEEP',
    severity: 'error',
    scope,
    file,
    path: '',
    message: `mappings and sequences nest deeper than ${MAX_YAML_DEPTH} levels; such a file is refused`,
    hint: 'flatten the structure at the position shown',
    ...(mark ? { line: mark.line, column: mark.column } : {}),
    ...extra,
  };
}

/**
 * Where nesting first goes deeper than `MAX_YAML_DEPTH`, estimated from the text alone (no parser): block
 * indentation levels, compact `- - -` entries and `[`/`{` outside quotes and comments. It may count a level
 * too many here and there, never too few; block scalars (`|`, `>`) are skipped.
 */
function deepNesting(text: string): Mark {
  const indents: number[] = [];
  let flow = 0;
  let quote = '';
  let blockScalarIndent = -1;
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    let i = 0;
    while (line.charCodeAt(i) === 32) i++;
    const blank = i >= line.length || line[i] === '#' || line[i] === '\r';
    if (blockScalarIndent >= 0) {
      if (blank || i > blockScalarIndent) continue;
      blockScalarIndent = -1;
    }
    if (blank && !quote) continue;
    let j = i;
    let depth = indents.length;
    if (flow === 0 && !quote) {
      while (indents.length && indents.at(-1)! >= i) indents.pop();
      indents.push(i);
      depth = indents.length;
      // Compact entries: `- - - x` nests one sequence per dash.
      while (line[j] === '-' && (line[j + 1] === ' ' || j + 1 === line.length)) {
        depth++;
        j += 2;
        while (line[j] === ' ') j++;
      }
    }
    for (; j < line.length; j++) {
      const c = line[j]!;
      if (quote) {
        if (c === '\\' && quote === '"') j++;
        else if (c === quote) quote = '';
        continue;
      }
      const prev = j === 0 ? ' ' : line[j - 1]!;
      // A quote opens a scalar only where a scalar starts (not the apostrophe inside `don't`).
      if ((c === '"' || c === "'") && ' [{,:-'.includes(prev)) quote = c;
      else if (c === '#' && prev === ' ') break;
      else if (c === '[' || c === '{') flow++;
      else if ((c === ']' || c === '}') && flow > 0) flow--;
      if (depth + flow > MAX_YAML_DEPTH) return { line: n + 1, column: j + 1 };
    }
    // A block scalar header (`key: |`, `- >-`): its lines, indented deeper, are text.
    if (flow === 0 && !quote && /(?:^|[:-]\s+)[|>][-+0-9]*\s*(?:#.*)?\r?$/.test(line.slice(i)))
      blockScalarIndent = i;
  }
  return undefined;
}

function parseWithDocument(
  text: string,
  display: string,
  scope: IssueScope,
  extra: Partial<IssueInput>,
): { ok: true; value: unknown } | { ok: false; issues: ConfigIssue[] } {
  const { LineCounter, parseDocument } = yaml();
  const lineCounter = new LineCounter();
  let doc: Yaml.Document.Parsed;
  try {
    doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true, strict: true });
  } catch (err) {
    return { ok: false, issues: [syntaxIssue(display, scope, (err as Error).message, undefined, extra)] };
  }
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        return syntaxIssue(
          display,
          scope,
          firstLine(e.message),
          pos ? { line: pos.line, column: pos.col } : undefined,
          extra,
        );
      }),
    };
  }
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: 50 }) };
  } catch (err) {
    return {
      ok: false,
      issues: [syntaxIssue(display, scope, firstLine((err as Error).message), undefined, extra)],
    };
  }
}

/** An alias bomb: the values seen through aliases outnumber those written by this factor. */
const ALIAS_EXPANSION_FACTOR = 10;

/**
 * Aliases come back as shared references; every walker after the parse (substitution, validation,
 * hashing) would see them expanded. Counts the expanded tree, stopping as soon as it is too large.
 */
function aliasesExplode(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const distinct = new Set<object>();
  let shared = false;
  const pending: unknown[] = [value];
  while (pending.length) {
    const v = pending.pop();
    if (v === null || typeof v !== 'object') continue;
    if (distinct.has(v)) {
      shared = true;
      continue;
    }
    distinct.add(v);
    for (const c of Object.values(v)) pending.push(c);
  }
  if (!shared) return false;
  const limit = Math.max(10_000, ALIAS_EXPANSION_FACTOR * distinct.size);
  // Iterative: a recursive alias (`&a [*a]`) makes a cycle, which the limit ends.
  let expanded = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (++expanded > limit) return true;
    for (const c of Object.values(v)) stack.push(c);
  }
  return false;
}

/** How long a file's document tree is kept after its last use by `locate`. */
const LOCATOR_KEEP_MS = 10_000;
let documentParses = 0;

/** How many document trees `locate` has built (tests). */
export function locatorParseCount(): number {
  return documentParses;
}

/**
 * `locate` of a file: the document tree (positions) is built on first use and dropped `keepMs` after the
 * last use. Issues come in bursts (one load, one reload), so one tree serves a burst; kept for good, the
 * tree of a large file (hundreds of MB for a few MB of YAML) would stay for as long as the snapshot lives,
 * because every job keeps a way to locate its own issues.
 */
export function lazyLocator(
  text: string,
  keepMs = LOCATOR_KEEP_MS,
  schedule: (fn: () => void, ms: number) => TimerHandle = (fn, ms) => setTimer(fn, ms, { unref: true }),
): SourceFile['locate'] {
  let parsedDoc: { doc: Yaml.Document.Parsed; lineCounter: Yaml.LineCounter } | undefined;
  let release: TimerHandle | undefined;
  return (segments, key) => {
    const { isMap, isPair, isScalar, LineCounter, parseDocument } = yaml();
    if (!parsedDoc) {
      const lineCounter = new LineCounter();
      parsedDoc = { doc: parseDocument(text, { lineCounter, uniqueKeys: true, strict: true }), lineCounter };
      documentParses++;
    }
    release?.cancel();
    release = schedule(() => (parsedDoc = undefined), keepMs);
    const { doc, lineCounter } = parsedDoc;
    let node: unknown;
    try {
      node = segments.length === 0 ? doc.contents : doc.getIn(segments as (string | number)[], true);
    } catch {
      return undefined;
    }
    if (key !== undefined && isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
      node = pair?.key ?? node;
    }
    const range = (node as Yaml.Node | undefined)?.range;
    if (!range) return undefined;
    const pos = lineCounter.linePos(range[0]);
    return { line: pos.line, column: pos.col };
  };
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}

function syntaxIssue(
  file: string,
  scope: IssueScope,
  message: string,
  pos: { line: number; column: number } | undefined,
  extra: Partial<IssueInput>,
): ConfigIssue {
  return {
    code: 'CONFIG_YAML_SYNTAX',
    severity: 'error',
    scope,
    file,
    path: '',
    message: `YAML syntax error: ${message}`,
    hint: 'fix the YAML at the position shown',
    ...(pos ? { line: pos.line, column: pos.column } : {}),
    ...extra,
  };
}
