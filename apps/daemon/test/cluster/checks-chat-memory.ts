// C6 (memory holds each exchange once) and C7 (a turn sees its chat's whole history) over a history's chat
// part: the memory rows read at the end and the model's requests.
import type { ChatHistory, MemoryRow } from './chat-history.js';
import { chatMessageText, parseAnswerText, parseChatMessageText, type ChatMessage } from './chat-workload.js';
import {
  firstAnswer,
  inFlightAt,
  iso,
  redeliveryWindowMs,
  sample,
  type ChatCheckParams,
  type ChatLedger,
} from './checks-chat.js';
import type { Violation } from './checks-delivery.js';
import type { History } from './history.js';

/** What memory holds at the end: exchanges per message text, and rows that do not pair up. */
interface MemoryCensus {
  exchanges: Map<string, number>;
  problems: string[];
}

/** The chat id of a session key `<agent>|<binding>|<plugin>|<instance>|<chat id>`. */
const chatIdOf = (sessionKey: string): string => sessionKey.slice(sessionKey.lastIndexOf('|') + 1);

/**
 * Reads each session's rows in id order as exchanges: a user row, then the assistant row answering it (the
 * memory writes both in one transaction, under a per-session lock, so they are adjacent). A user row whose
 * text is not a message of the session's chat, an answer to another message, or a row out of its pair is a
 * problem.
 */
function memoryCensus(rows: readonly MemoryRow[], l: ChatLedger): MemoryCensus {
  const sessions = new Map<string, MemoryRow[]>();
  for (const r of rows) sessions.set(r.sessionKey, [...(sessions.get(r.sessionKey) ?? []), r]);
  const exchanges = new Map<string, number>();
  const problems: string[] = [];
  for (const [key, list] of sessions) {
    const chatId = chatIdOf(key);
    for (let i = 0; i < list.length; i++) {
      const row = list[i]!;
      const next = list[i + 1];
      if (row.role !== 'user' || next?.role !== 'assistant') {
        problems.push(`row ${row.id} (${row.role} "${row.content}") of chat ${chatId} is not in a pair`);
        continue;
      }
      i++;
      const m = l.byText.get(row.content);
      const answer = parseAnswerText(next.content);
      if (m === undefined || m.chatId !== chatId)
        problems.push(`row ${row.id} of chat ${chatId} holds "${row.content}", no message of that chat`);
      else if (answer === undefined || chatMessageText(answer.chat, answer.seq) !== row.content)
        problems.push(`row ${next.id} of chat ${chatId} answers "${row.content}" with "${next.content}"`);
      else exchanges.set(row.content, (exchanges.get(row.content) ?? 0) + 1);
    }
  }
  return { exchanges, problems };
}

export interface ChatMemoryStats {
  exchanges: number;
  repeats: number;
  /** Answered messages whose exchange memory does not hold (each charged to a fault). */
  missing: number;
}

/**
 * C6: at the end, memory holds every answered message's exchange exactly once, in a well-formed pair in its
 * chat's session, except for faults: an exchange may be missing when its message was in flight at a fault (a
 * write cut off after the answer went out), and each repeat is charged to a distinct fault its message was in
 * flight at (a turn run again after its first run wrote memory). Row times are the daemons' clocks, so no
 * time is compared.
 */
export function checkChatMemory(
  h: History,
  c: ChatHistory,
  l: ChatLedger,
  p: ChatCheckParams,
): { violations: Violation[]; stats: ChatMemoryStats } {
  const stats: ChatMemoryStats = { exchanges: 0, repeats: 0, missing: 0 };
  if (c.memory === undefined) return { violations: [], stats };
  const census = memoryCensus(c.memory, l);
  const out: Violation[] = census.problems.length
    ? [
        {
          invariant: 'C6',
          message: `${census.problems.length} malformed memory rows: ${sample(census.problems)}`,
        },
      ]
    : [];
  const repeated: string[] = [];
  const missing: string[] = [];
  for (const m of c.messages) {
    const text = chatMessageText(m.chat, m.seq);
    const n = census.exchanges.get(text) ?? 0;
    const faults = h.faults.filter((f) => inFlightAt(l, m, f, p)).length;
    stats.exchanges += n;
    if (n > 1) {
      stats.repeats += n - 1;
      if (n - 1 > faults) repeated.push(`${text} ×${n} (in flight at ${faults} faults)`);
    }
    if (n === 0 && firstAnswer(l, m) !== undefined) {
      stats.missing++;
      if (faults === 0) missing.push(text);
    }
  }
  if (repeated.length > 0)
    out.push({
      invariant: 'C6',
      message: `${repeated.length} exchanges held more often than faults explain: ${sample(repeated)}`,
    });
  if (missing.length > 0)
    out.push({
      invariant: 'C6',
      message: `${missing.length} answered messages missing from memory outside faults: ${sample(missing)}`,
    });
  return { violations: out, stats };
}

export interface ChatHistoryStats {
  turns: number;
  /** Turns that were given at least one earlier exchange. */
  withHistory: number;
}

/**
 * C7: every model request of a chat's message holds, in its history, every earlier message of that chat
 * whose first answer reached the chat before the request, and nothing of another chat (a chat's turns run one
 * after another, and a turn writes memory after its answer and before the next turn reads it). Not expected:
 * an exchange memory lost (C6 judges it); one whose message was in flight at a fault whose window the request
 * falls in (its write may land after the read, or the read come before a pause froze the turn); and, when
 * the history is full (memory.yaml `max_messages`), those older than its oldest.
 */
export function checkChatHistory(
  h: History,
  c: ChatHistory,
  l: ChatLedger,
  p: ChatCheckParams,
): { violations: Violation[]; stats: ChatHistoryStats } {
  const held = new Set((c.memory ?? []).filter((r) => r.role === 'user').map((r) => r.content));
  const lost = (m: ChatMessage): boolean =>
    c.memory !== undefined && !held.has(chatMessageText(m.chat, m.seq));
  const out: Violation[] = [];
  const stats: ChatHistoryStats = { turns: c.turns.length, withHistory: 0 };
  for (const t of c.turns) {
    const own = parseChatMessageText(t.text);
    if (own === undefined || !l.byText.has(t.text)) {
      out.push({
        invariant: 'C7',
        message: `the model was asked about "${t.text}" at ${iso(t.at)}, never sent`,
      });
      continue;
    }
    if (t.history.length > 0) stats.withHistory++;
    const foreign = t.history.filter((x) => parseChatMessageText(x)?.chat !== own.chat);
    if (foreign.length > 0)
      out.push({
        invariant: 'C7',
        message: `the turn of ${t.text} at ${iso(t.at)} was given another chat's history: ${sample(foreign)}`,
      });
    const seen = new Set(t.history);
    const full = t.history.length >= Math.floor(p.historyLimit / 2);
    const oldest = Math.min(...t.history.map((x) => parseChatMessageText(x)?.seq ?? Infinity));
    const missed = c.messages
      .filter((m) => m.chat === own.chat && m.seq < own.seq)
      .filter((m) => (firstAnswer(l, m) ?? Infinity) < t.at)
      .filter((m) => !(full && m.seq < oldest))
      .filter((m) => !lost(m))
      .filter(
        (m) => !h.faults.some((f) => inFlightAt(l, m, f, p) && t.at <= f.healedAt + redeliveryWindowMs(p)),
      )
      .map((m) => chatMessageText(m.chat, m.seq))
      .filter((x) => !seen.has(x));
    if (missed.length > 0)
      out.push({
        invariant: 'C7',
        message: `the turn of ${t.text} at ${iso(t.at)} was given ${t.history.length} earlier messages, missing ${missed.length} answered before: ${sample(missed)}`,
      });
  }
  return { violations: out, stats };
}
