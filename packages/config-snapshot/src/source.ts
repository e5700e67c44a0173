/** Reading one YAML file with positions, so every issue can name its line and column. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CORE_SCHEMA, load as loadFast } from 'js-yaml';
import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { formatPath, type ConfigIssue, type ConfigIssueCode, type IssueScope } from './issues.js';
import { deepFreeze } from './snapshot.js';

export type Segments = readonly (string | number)[];

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
  severity?: 'error' | 'warning';
}

export function issueAt(
  src: Pick<SourceFile, 'display' | 'locate'>,
  segments: Segments,
  input: IssueInput,
  key?: string,
): ConfigIssue {
  const pos = src.locate(segments, key) ?? nearestPosition(src, segments);
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

function nearestPosition(
  src: Pick<SourceFile, 'locate'>,
  segments: Segments,
): { line: number; column: number } | undefined {
  for (let n = segments.length - 1; n >= 0; n--) {
    const pos = src.locate(segments.slice(0, n));
    if (pos) return pos;
  }
  return undefined;
}

const MAX_FILE_BYTES = 4 * 1024 * 1024;
const MAX_CACHED_FILES = 4096;
/** Parsed files by content hash, least recently used first. Values are frozen: nobody may mutate them. */
const parsed = new Map<string, { value: unknown; locate: SourceFile['locate'] }>();

/**
 * Parses a YAML file. Returns the file, or issues when it cannot be read or parsed; never throws.
 * Aliases are capped so that an alias bomb cannot blow up memory.
 */
export function readYamlFile(
  configDir: string,
  rel: string,
  scope: IssueScope,
  extra: Partial<IssueInput> = {},
): { src?: SourceFile; issues: ConfigIssue[] } {
  const abs = join(configDir, rel);
  const display = join(configDir, rel);
  let text: string;
  try {
    const buf = readFileSync(abs);
    if (buf.length > MAX_FILE_BYTES) {
      return {
        issues: [
          {
            code: 'CONFIG_FILE_UNREADABLE',
            severity: 'error',
            scope,
            file: display,
            path: '',
            message: `file is larger than ${MAX_FILE_BYTES} bytes`,
            ...extra,
          },
        ],
      };
    }
    text = buf.toString('utf8');
  } catch (err) {
    return {
      issues: [
        {
          code: 'CONFIG_FILE_UNREADABLE',
          severity: 'error',
          scope,
          file: display,
          path: '',
          message: `cannot read file: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
          hint: 'check that the file exists and the daemon user may read it',
          ...extra,
        },
      ],
    };
  }
  return parseYamlText(text, { rel, abs, display }, scope, extra);
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
    parsed.set(hash, cached);
    return { src: { ...names, hash, value: cached.value, locate: cached.locate }, issues: [] };
  }
  // Fast path: js-yaml builds plain values directly (a 2 MB pollers.yaml in ~0.2 s and ~10 MB, where the
  // document tree takes ~2 s and ~180 MB). Both read the YAML 1.2 core schema. Anything js-yaml refuses
  // goes through the `yaml` document parser, whose messages and positions the issues use.
  let value: unknown;
  const fast = parseFast(text);
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
  } else {
    const slow = parseWithDocument(text, names.display, scope, extra);
    if (!slow.ok) return { issues: slow.issues };
    value = slow.value;
  }
  // The parsed document (a large tree) is not kept: positions are needed only for issues, so `locate`
  // parses the text again on first use. Snapshots of big files then hold their text, not their tree.
  const locate = lazyLocator(text);
  const frozen = deepFreeze(value ?? null);
  parsed.set(hash, { value: frozen, locate });
  if (parsed.size > MAX_CACHED_FILES) parsed.delete(parsed.keys().next().value!);
  return { src: { ...names, hash, value: frozen, locate }, issues: [] };
}

function parseFast(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: loadFast(text, { schema: CORE_SCHEMA }) };
  } catch {
    return { ok: false };
  }
}

function parseWithDocument(
  text: string,
  display: string,
  scope: IssueScope,
  extra: Partial<IssueInput>,
): { ok: true; value: unknown } | { ok: false; issues: ConfigIssue[] } {
  const lineCounter = new LineCounter();
  let doc: Document.Parsed;
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

function lazyLocator(text: string): SourceFile['locate'] {
  let parsedDoc: { doc: Document.Parsed; lineCounter: LineCounter } | undefined;
  return (segments, key) => {
    if (!parsedDoc) {
      const lineCounter = new LineCounter();
      parsedDoc = { doc: parseDocument(text, { lineCounter, uniqueKeys: true, strict: true }), lineCounter };
    }
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
    const range = (node as Node | undefined)?.range;
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
