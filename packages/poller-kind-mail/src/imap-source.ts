/**
 * The `mail` kind over IMAP: search with the translated query, read each message once (headers, the
 * text part decoded by the client library), and mark `\Seen` after delivery. Item ids are
 * `<UIDVALIDITY>:<UID>`, so the runner's seen set dedups across ticks and restarts.
 */
import { PermanentError, type KindConfigProblem, type PollItem, type TickContext } from '@agent/poller-core';
import { timeoutSignal } from '@agent/timers';
import type { FetchMessageObject, ImapFlow, MessageStructureObject } from 'imapflow';
import type { MailConfig } from './config.js';
import { IMAP_QUERY_OPERATORS, translateQuery, windowSince, type ImapSearch } from './imap-query.js';
import type { ImapSession } from './imap-session.js';
import { mailItems } from './items.js';
import type { MailMessage } from './message.js';
import { senderAddress } from './sender.js';
import { decodeCharset, decodeHeaderWords, htmlToText, normalizeWhitespace } from './text.js';

/** Bytes of a text part read per message. */
const PART_MAX_BYTES = 256 * 1024;
const SNIPPET_CHARS = 200;
/** UIDs one tick looks at, the newest; older matches wait (as the Gmail listing caps at 2500). */
const SEARCH_MAX_UIDS = 2500;
/** Deadline of one `\Seen` store after a delivery. */
const MARK_SEEN_TIMEOUT_MS = 10_000;

export interface ImapMailbox {
  readonly session: ImapSession;
  readonly accountName: string;
  readonly mailbox: string;
  /** Parsed messages by id, least recently used first. */
  readonly cache: Map<string, MailMessage>;
}

export type ImapCursor = { uid_validity: string };

/**
 * The job query as IMAP SEARCH, or a Permanent error that names the job, `config.query` and the fix. The
 * job was checked when it was loaded (`imapQueryProblems`); this catches an account that turned IMAP
 * under a running job whose reload was rejected.
 */
function searchOf(config: MailConfig, jobId: string, now: Date): ImapSearch {
  const t = translateQuery(config.query, now);
  if (t.ok) return t.search;
  throw new PermanentError(
    `job "${jobId}" config.query cannot be read by an IMAP account: ${t.problem}; rewrite it with ${IMAP_QUERY_OPERATORS}`,
  );
}

/** At load and reload: a query the job's IMAP account cannot run rejects the job at `config.query`. */
export function imapQueryProblems(config: MailConfig, accountName: string): KindConfigProblem[] {
  const t = translateQuery(config.query, new Date(0));
  if (t.ok) return [];
  return [
    {
      path: ['query'],
      message: `mail account "${accountName}" is an IMAP account, which cannot run this query: ${t.problem}`,
      fix: `rewrite the query with ${IMAP_QUERY_OPERATORS}`,
    },
  ];
}

/**
 * A header of the raw header block (read byte for byte as latin1), unfolded. Raw 8-bit bytes in it are
 * decoded as UTF-8 when they are (RFC 6532), else as windows-1252; encoded words are left to the caller.
 */
function header(lines: string, name: string): string {
  const m = new RegExp(`^${name}:[ \\t]*((?:.*)(?:\\r?\\n[ \\t].*)*)`, 'im').exec(lines);
  const value = m ? m[1]!.replace(/\r?\n[ \t]+/g, ' ').trim() : '';
  return decodeCharset(Buffer.from(value, 'latin1'), undefined);
}

/** The text/plain part outside attachments, else text/html; `undefined` for a message without text. */
function textPart(node: MessageStructureObject | undefined): { part: string; html: boolean } | undefined {
  const parts: MessageStructureObject[] = [];
  const walk = (n: MessageStructureObject) => {
    if (n.childNodes?.length) n.childNodes.forEach(walk);
    else if (n.disposition !== 'attachment') parts.push(n);
  };
  if (node) walk(node);
  const plain = parts.find((p) => p.type === 'text/plain');
  const html = parts.find((p) => p.type === 'text/html');
  const pick = plain ?? html;
  return pick ? { part: pick.part ?? '1', html: pick === html } : undefined;
}

async function readText(
  client: ImapFlow,
  uid: number,
  node: MessageStructureObject | undefined,
): Promise<string> {
  const at = textPart(node);
  if (!at) return '';
  const { meta, content } = await client.download(String(uid), at.part, {
    uid: true,
    maxBytes: PART_MAX_BYTES,
  });
  const chunks: Buffer[] = [];
  if (content) for await (const chunk of content) chunks.push(chunk as Buffer);
  // The client converts the charsets it knows to UTF-8 (`meta.charset` is then utf-8); any other label
  // stays on the raw bytes, which the shared decoder reads (windows-1252 when the label is unknown).
  const text = decodeCharset(Buffer.concat(chunks), meta?.charset);
  return at.html ? htmlToText(text) : text;
}

async function parse(client: ImapFlow, id: string, msg: FetchMessageObject): Promise<MailMessage> {
  const raw = msg.headers ? msg.headers.toString('latin1') : '';
  const from = decodeHeaderWords(header(raw, 'From'));
  const text = normalizeWhitespace(await readText(client, msg.uid, msg.bodyStructure));
  const date = msg.internalDate instanceof Date ? msg.internalDate : new Date(msg.internalDate ?? 0);
  return {
    id,
    threadId: msg.envelope?.messageId ?? '',
    labelIds: msg.flags?.has('\\Draft') ? ['DRAFT'] : [],
    internalDate: date.getTime() || 0,
    snippet: text.slice(0, SNIPPET_CHARS),
    subject: decodeHeaderWords(header(raw, 'Subject')),
    from,
    fromAddress: senderAddress(header(raw, 'From')),
    date: header(raw, 'Date'),
    text,
  };
}

function remember(box: ImapMailbox, m: MailMessage): void {
  box.cache.delete(m.id);
  box.cache.set(m.id, m);
  while (box.cache.size > 5000) box.cache.delete(box.cache.keys().next().value!);
}

/** Opens the mailbox read-write (for `\Seen`) and returns its UIDVALIDITY. */
async function openBox(client: ImapFlow, mailbox: string, readOnly: boolean): Promise<string> {
  const box = await client.mailboxOpen(mailbox, { readOnly });
  return String(box.uidValidity);
}

export async function imapTick(
  ctx: TickContext<MailConfig, ImapCursor, unknown>,
  box: ImapMailbox,
): Promise<{ items: PollItem[]; cursor: ImapCursor }> {
  const { config, signal, logger, job } = ctx;
  const now = ctx.now();
  const search = searchOf(config, job.id, now);
  const window = windowSince(now, config.newer_than);
  const { uidValidity, messages } = await box.session.use(signal, 'search', async (client) => {
    const validity = await openBox(client, box.mailbox, false);
    const query = {
      ...(Object.keys(search).length ? { or: [search] } : {}),
      since: window.since,
      draft: false,
    };
    const found = ((await client.search(query, { uid: true })) || []).sort((a, b) => a - b);
    const uids = found.slice(-SEARCH_MAX_UIDS);
    if (uids.length < found.length)
      logger.warn('mail search truncated: older matches wait for a later tick', {
        listed: uids.length,
        found: found.length,
      });
    const out: MailMessage[] = [];
    const missing = uids.filter((uid) => {
      const hit = box.cache.get(`${validity}:${uid}`);
      if (hit) out.push(hit);
      return !hit;
    });
    if (missing.length) {
      const fetched: FetchMessageObject[] = [];
      for await (const msg of client.fetch(
        missing.join(','),
        {
          uid: true,
          flags: true,
          envelope: true,
          internalDate: true,
          bodyStructure: true,
          headers: ['from', 'subject', 'date'],
        },
        { uid: true },
      ))
        fetched.push(msg);
      // Bodies after the FETCH completed: a download is a command of its own on the same connection.
      for (const msg of fetched) {
        const m = await parse(client, `${validity}:${msg.uid}`, msg);
        remember(box, m);
        out.push(m);
      }
    }
    return { uidValidity: validity, messages: out.filter((m) => m.internalDate >= window.cutoffMs) };
  });
  const before = readCursor(ctx.cursor);
  if (before !== null && before !== uidValidity)
    logger.warn('mailbox UIDVALIDITY changed: mail within newer_than is considered again', {
      mailbox: box.mailbox,
      from: before,
      to: uidValidity,
    });
  const markSeen = async (m: MailMessage) => {
    const [validity, uid] = m.id.split(':');
    const deadline = timeoutSignal(MARK_SEEN_TIMEOUT_MS);
    try {
      await box.session.use(deadline.signal, 'mark \\Seen', async (client) => {
        // Never flag a message of another UIDVALIDITY generation (the UID would name another message).
        if ((await openBox(client, box.mailbox, false)) !== validity) return;
        await client.messageFlagsAdd(uid!, ['\\Seen'], { uid: true });
      });
    } finally {
      deadline.cancel();
    }
  };
  return { items: mailItems(messages, config, logger, markSeen), cursor: { uid_validity: uidValidity } };
}

function readCursor(c: unknown): string | null {
  return c && typeof c === 'object' && typeof (c as ImapCursor).uid_validity === 'string'
    ? (c as ImapCursor).uid_validity
    : null;
}

/** `mail_count_unread` over IMAP: a read-only SEARCH (EXAMINE), nothing flagged or fetched. */
export async function imapCountUnread(
  box: ImapMailbox,
  query: string,
  newerThan: string | undefined,
  signal: AbortSignal,
  now: Date,
): Promise<{ query: string; count: number; exact: true }> {
  const t = translateQuery(query, now);
  if (!t.ok)
    throw new PermanentError(
      `query cannot be read by an IMAP account: ${t.problem}; use ${IMAP_QUERY_OPERATORS}`,
    );
  const window = newerThan ? windowSince(now, newerThan) : undefined;
  const count = await box.session.use(signal, 'count', async (client) => {
    await openBox(client, box.mailbox, true);
    const q = {
      ...(Object.keys(t.search).length ? { or: [t.search] } : {}),
      seen: false,
      ...(window ? { since: window.since } : {}),
    };
    const uids = (await client.search(q, { uid: true })) || [];
    if (!window) return uids.length;
    let n = 0;
    if (uids.length)
      for await (const m of client.fetch(uids.join(','), { uid: true, internalDate: true }, { uid: true }))
        if (new Date(m.internalDate ?? 0).getTime() >= window.cutoffMs) n++;
    return n;
  });
  return { query, count, exact: true };
}
