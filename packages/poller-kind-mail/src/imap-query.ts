/**
 * Translates the search-box query of a `mail` job (Gmail-style operators) into an IMAP SEARCH for
 * imapflow. Pure. What IMAP cannot express is refused with the operator and its position, never dropped
 * (dropping a term would silently widen what is delivered).
 */

/** imapflow's search object (the subset this module builds). */
export interface ImapSearch {
  from?: string;
  to?: string;
  cc?: string;
  bcc?: string;
  subject?: string;
  text?: string;
  seen?: boolean;
  flagged?: boolean;
  since?: Date;
  before?: Date;
  or?: ImapSearch[];
  not?: ImapSearch;
}

type Node =
  | { t: 'term'; search: ImapSearch }
  | { t: 'and'; nodes: Node[] }
  | { t: 'or'; nodes: Node[] }
  | { t: 'not'; node: Node };

export type QueryTranslation = { ok: true; search: ImapSearch } | { ok: false; problem: string };

/** What an IMAP account can search, for the messages that refuse a query. */
export const IMAP_QUERY_OPERATORS =
  'from:, to:, cc:, bcc:, subject:, is:unread, is:read, is:starred, newer_than:, older_than:, after:, before:, words, "phrases", OR, -, ( )';
const DAY_MS = 86_400_000;

class QueryError extends Error {}

interface Token {
  text: string;
  at: number;
  quoted: boolean;
}

/** Words, `key:value` / `key:"quoted value"`, `"phrases"`, parentheses. */
function tokenize(q: string): Token[] {
  const out: Token[] = [];
  const re = /\s*(?:(\()|(\))|(-?[A-Za-z_]+:"[^"]*")|(-?"[^"]*")|([^\s()"]+))/y;
  let i = 0;
  while (i < q.length) {
    if (/^\s*$/.test(q.slice(i))) break;
    re.lastIndex = i;
    const m = re.exec(q);
    if (!m) throw new QueryError(`unbalanced quote at character ${i + q.slice(i).search(/\S/) + 1}`);
    const text = (m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5])!;
    out.push({
      text,
      at: m.index + m[0].length - text.length + 1,
      quoted: m[3] !== undefined || m[4] !== undefined,
    });
    i = re.lastIndex;
  }
  return out;
}

/** `2d`, `3m`, `1y` before `now`, as an instant. */
function ago(value: string, now: Date): Date | undefined {
  const m = /^([1-9][0-9]{0,3})([dmy])$/.exec(value);
  if (!m) return undefined;
  const n = Number(m[1]);
  const d = new Date(now.getTime());
  if (m[2] === 'd') return new Date(now.getTime() - n * DAY_MS);
  if (m[2] === 'm') d.setUTCMonth(d.getUTCMonth() - n);
  else d.setUTCFullYear(d.getUTCFullYear() - n);
  return d;
}

/** `2026/03/05`, `2026-03-05` or epoch seconds. */
function dateOf(value: string): Date | undefined {
  if (/^\d{9,11}$/.test(value)) return new Date(Number(value) * 1000);
  const m = /^(\d{4})[/-](\d{1,2})[/-](\d{1,2})$/.exec(value);
  if (!m) return undefined;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return Number.isNaN(d.getTime()) ? undefined : d;
}

function unquote(v: string): string {
  return v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v;
}

function termOf(tok: Token, now: Date): ImapSearch {
  const text = tok.text;
  if (text.startsWith('"')) return { text: unquote(text) };
  const colon = text.indexOf(':');
  if (colon <= 0) return { text };
  const key = text.slice(0, colon).toLowerCase();
  const value = unquote(text.slice(colon + 1));
  const bad = (why: string) => new QueryError(`"${text}" at character ${tok.at}: ${why}`);
  if (value === '') throw bad('the operator has no value');
  switch (key) {
    case 'from':
    case 'to':
    case 'cc':
    case 'bcc':
    case 'subject':
      return { [key]: value };
    case 'is': {
      const v = value.toLowerCase();
      if (v === 'unread') return { seen: false };
      if (v === 'read') return { seen: true };
      if (v === 'starred') return { flagged: true };
      throw bad('IMAP has no equivalent of this is: value');
    }
    case 'newer_than':
    case 'older_than': {
      const d = ago(value, now);
      if (!d) throw bad('expected a count and a unit d, m or y (e.g. 2d)');
      return key === 'newer_than' ? { since: d } : { before: d };
    }
    case 'after':
    case 'before': {
      const d = dateOf(value);
      if (!d) throw bad('expected a date like 2026/03/05');
      return key === 'after' ? { since: d } : { before: d };
    }
    default:
      throw bad('this operator has no IMAP equivalent');
  }
}

/** Recursive descent: or := and (OR and)*; and := unary+; unary := -unary | ( or ) | term. */
function parse(tokens: Token[], now: Date): Node {
  let pos = 0;
  const peek = () => tokens[pos];
  const orExpr = (): Node => {
    const nodes = [andExpr()];
    while (peek()?.text === 'OR') {
      pos++;
      nodes.push(andExpr());
    }
    return nodes.length === 1 ? nodes[0]! : { t: 'or', nodes };
  };
  const andExpr = (): Node => {
    const nodes: Node[] = [];
    for (let tok = peek(); tok && tok.text !== ')' && tok.text !== 'OR'; tok = peek()) {
      if (tok.text === 'AND') pos++;
      else nodes.push(unary());
    }
    if (nodes.length === 0) {
      const tok = peek();
      throw new QueryError(
        tok
          ? `"${tok.text}" at character ${tok.at} has nothing before it`
          : 'the query ends where a term is expected',
      );
    }
    return nodes.length === 1 ? nodes[0]! : { t: 'and', nodes };
  };
  const unary = (): Node => {
    const tok = tokens[pos++]!;
    if (tok.text === '(') {
      const inner = orExpr();
      if (peek()?.text !== ')') throw new QueryError(`"(" at character ${tok.at} is never closed`);
      pos++;
      return inner;
    }
    if (tok.text === '-' && peek()?.text === '(') return { t: 'not', node: unary() };
    if (tok.text.startsWith('-') && tok.text.length > 1)
      return {
        t: 'not',
        node: { t: 'term', search: termOf({ ...tok, text: tok.text.slice(1), at: tok.at + 1 }, now) },
      };
    if (tok.text.includes('{') || tok.text.includes('}'))
      throw new QueryError(`"${tok.text}" at character ${tok.at}: {…} groups are not supported; use OR`);
    return { t: 'term', search: termOf(tok, now) };
  };
  const node = orExpr();
  if (pos < tokens.length) {
    const tok = tokens[pos]!;
    throw new QueryError(`"${tok.text}" at character ${tok.at} closes nothing`);
  }
  return node;
}

/** Two searches ANDed. On a key clash `b` goes behind a one-element `or` (imapflow walks it flat) or NOT NOT. */
function both(a: ImapSearch, b: ImapSearch): ImapSearch {
  if (!Object.keys(b).some((k) => k in a)) return { ...a, ...b };
  return { or: [a], not: { not: b } };
}

function compile(node: Node): ImapSearch {
  if (node.t === 'term') return { ...node.search };
  if (node.t === 'not') return { not: compile(node.node) };
  if (node.t === 'or') return { or: node.nodes.map(compile) };
  return node.nodes.map(compile).reduce(both);
}

/**
 * The IMAP search of `query` at `now`. An empty query matches everything (`{}`). A problem names the
 * operator and its character position (`IMAP_QUERY_OPERATORS` lists what works). Whether a query
 * translates does not depend on `now`.
 */
export function translateQuery(query: string, now: Date): QueryTranslation {
  try {
    const tokens = tokenize(query);
    if (tokens.length === 0) return { ok: true, search: {} };
    return { ok: true, search: compile(parse(tokens, now)) };
  } catch (err) {
    if (!(err instanceof QueryError)) throw err;
    return { ok: false, problem: err.message };
  }
}

/** The search of one tick: the job query AND received since the day the window starts (IMAP dates are days). */
export function windowSince(now: Date, newerThan: string): { since: Date; cutoffMs: number } {
  const start = ago(newerThan, now) ?? new Date(now.getTime() - 2 * DAY_MS);
  // SINCE compares dates without time (in the server's zone): one day earlier, the exact cut is client-side.
  return { since: new Date(start.getTime() - DAY_MS), cutoffMs: start.getTime() };
}
