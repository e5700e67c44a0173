// C1 (every message answered), C2 (answers in message order per chat) and C3 (duplicate answers only from a
// fault, one per turn in flight) over a history's chat part; and what the other chat checks share: which
// reply answers which message, and which messages a fault could have caught in their turn.
import type { ChatHistory, ChatReply } from './chat-history.js';
import { chatMessageText, parseAnswerText, type ChatMessage } from './chat-workload.js';
import type { Violation } from './checks-delivery.js';
import type { History } from './history.js';
import type { AppliedFault } from './nemesis-run.js';

export interface ChatCheckParams {
  /** `cluster.yaml` `chat.owner_ttl_secs`, in ms: how long a silent owner's leases stay held. */
  ownerTtlMs: number;
  /** `cluster.yaml` `chat.ack_wait_secs`, in ms: when an unacknowledged turn is delivered again. */
  ackWaitMs: number;
  /** `memory.yaml` `max_messages`: the most history messages a turn is given. */
  historyLimit: number;
  /** Allowance on top of each bound; 3 s by default. */
  slackMs?: number;
}

export const chatSlackMs = (p: ChatCheckParams): number => p.slackMs ?? 3000;

/**
 * How long after a fault heals its effects may still show in chat: a turn cut off by it runs again once its
 * ack deadline passed and its partition's lease moved (ack wait + owner TTL), plus slack.
 */
export const redeliveryWindowMs = (p: ChatCheckParams): number => p.ackWaitMs + p.ownerTtlMs + chatSlackMs(p);

/** A fault's window: from its start to its heal + the redelivery window. */
const inFaultWindow = (f: AppliedFault, t: number, p: ChatCheckParams): boolean =>
  f.startedAt <= t && t <= f.healedAt + redeliveryWindowMs(p);

export const iso = (t: number): string => new Date(t).toISOString();

export const sample = (xs: readonly string[]): string =>
  xs.slice(0, 5).join(', ') + (xs.length > 5 ? ', …' : '');

/** Which reply answers which message. */
export interface ChatLedger {
  /** Messages by text (`c7#12`). */
  byText: Map<string, ChatMessage>;
  /** Times of the answers naming each message, in time order. */
  answers: Map<string, number[]>;
  /** Per chat, the replies that answer no message (the runtime's apology for a failed turn), in time order. */
  failures: Map<string, ChatReply[]>;
  /** Answers naming a message never sent, or sent to another chat than the message's. */
  strays: ChatReply[];
}

export function chatLedger(c: ChatHistory): ChatLedger {
  const byText = new Map(c.messages.map((m) => [chatMessageText(m.chat, m.seq), m]));
  const chatOfId = new Map(c.chats.map((x) => [x.chatId, x.chat]));
  const answers = new Map<string, number[]>();
  const failures = new Map<string, ChatReply[]>();
  const strays: ChatReply[] = [];
  for (const r of c.replies) {
    const a = parseAnswerText(r.text);
    if (a === undefined) {
      const chat = chatOfId.get(r.chatId) ?? r.chatId;
      failures.set(chat, [...(failures.get(chat) ?? []), r]);
      continue;
    }
    const text = chatMessageText(a.chat, a.seq);
    const m = byText.get(text);
    if (m === undefined || m.chatId !== r.chatId) strays.push(r);
    else answers.set(text, [...(answers.get(text) ?? []), r.at]);
  }
  return { byText, answers, failures, strays };
}

export const firstAnswer = (l: ChatLedger, m: ChatMessage): number | undefined =>
  l.answers.get(chatMessageText(m.chat, m.seq))?.[0];

/**
 * A fault could have caught the message's turn: the message was queued before the fault healed, and not
 * answered before it started (less slack: after its answer a turn still writes memory and acknowledges).
 */
export function inFlightAt(l: ChatLedger, m: ChatMessage, f: AppliedFault, p: ChatCheckParams): boolean {
  const first = firstAnswer(l, m);
  return m.enqueuedAt <= f.healedAt && (first === undefined || first >= f.startedAt - chatSlackMs(p));
}

/**
 * C1: every message sent before the quiet period got an answer naming it, or a failure reply in its chat
 * (matched in order: each unanswered message to the earliest unused failure reply sent after it); every
 * failure reply came within a fault's window (a turn fails only when a fault cuts it off); no answer names a
 * message that was never sent, or goes to another chat.
 */
export function checkChatReplies(h: History, c: ChatHistory, l: ChatLedger, p: ChatCheckParams): Violation[] {
  const out: Violation[] = [];
  const lost: string[] = [];
  const used = new Set<ChatReply>();
  const sorted = [...c.messages].sort((a, b) => a.seq - b.seq);
  for (const m of sorted.filter((x) => x.enqueuedAt <= h.quietFrom && firstAnswer(l, x) === undefined)) {
    const failure = (l.failures.get(m.chat) ?? []).find((r) => !used.has(r) && r.at >= m.enqueuedAt);
    if (failure) used.add(failure);
    else lost.push(chatMessageText(m.chat, m.seq));
  }
  if (lost.length > 0)
    out.push({ invariant: 'C1', message: `${lost.length} messages never answered: ${sample(lost)}` });
  const unexplained = [...l.failures.values()]
    .flat()
    .filter((r) => !h.faults.some((f) => inFaultWindow(f, r.at, p)))
    .map((r) => `${r.chatId} at ${iso(r.at)} ("${r.text.slice(0, 40)}")`);
  if (unexplained.length > 0)
    out.push({
      invariant: 'C1',
      message: `${unexplained.length} replies that answer no message outside every fault window: ${sample(unexplained)}`,
    });
  if (l.strays.length > 0)
    out.push({
      invariant: 'C1',
      message: `${l.strays.length} answers to no message sent in their chat: ${sample(l.strays.map((r) => `"${r.text}" to ${r.chatId}`))}`,
    });
  return out;
}

/**
 * C2: per chat, first answers come in message order. An answer to a message after the answer to a later one
 * is a redelivery, allowed within a fault's window.
 */
export function checkChatOrder(h: History, c: ChatHistory, l: ChatLedger, p: ChatCheckParams): Violation[] {
  const firsts = c.messages
    .flatMap((m) => {
      const at = firstAnswer(l, m);
      return at === undefined ? [] : [{ m, at }];
    })
    .sort((a, b) => a.at - b.at);
  const highest = new Map<string, number>();
  const out: Violation[] = [];
  for (const { m, at } of firsts) {
    const top = highest.get(m.chat) ?? 0;
    if (m.seq < top && !h.faults.some((f) => inFaultWindow(f, at, p)))
      out.push({
        invariant: 'C2',
        message: `${chatMessageText(m.chat, m.seq)} first answered at ${iso(at)}, after ${chatMessageText(m.chat, top)}, outside every fault window`,
      });
    highest.set(m.chat, Math.max(top, m.seq));
  }
  return out;
}

export interface ChatDuplicateStats {
  duplicates: number;
  attributed: number;
}

/**
 * C3: each answer after a message's first is charged to one fault: the message was in flight at it
 * (`inFlightAt`) and the answer came within its window. A fault absorbs at most one duplicate per message.
 * Duplicates are charged in time order to the eligible fault whose window closes first.
 */
export function checkChatDuplicates(
  h: History,
  c: ChatHistory,
  l: ChatLedger,
  p: ChatCheckParams,
): { violations: Violation[]; stats: ChatDuplicateStats } {
  const extras = c.messages
    .flatMap((m) => (l.answers.get(chatMessageText(m.chat, m.seq)) ?? []).slice(1).map((at) => ({ m, at })))
    .sort((a, b) => a.at - b.at);
  const used = new Set<string>();
  const unattributed: string[] = [];
  for (const x of extras) {
    const text = chatMessageText(x.m.chat, x.m.seq);
    const fault = h.faults
      .map((f, i) => ({ f, i }))
      .filter(
        ({ f, i }) => !used.has(`${i}|${text}`) && inFlightAt(l, x.m, f, p) && inFaultWindow(f, x.at, p),
      )
      .sort((a, b) => a.f.healedAt - b.f.healedAt)[0];
    if (fault === undefined) unattributed.push(`${text} at ${iso(x.at)}`);
    else used.add(`${fault.i}|${text}`);
  }
  return {
    violations:
      unattributed.length === 0
        ? []
        : [
            {
              invariant: 'C3',
              message: `${unattributed.length} duplicate answers not attributable to a fault: ${sample(unattributed)}`,
            },
          ],
    stats: { duplicates: extras.length, attributed: extras.length - unattributed.length },
  };
}
