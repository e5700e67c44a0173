// The chat part of a fault run's history: what the driver sent (source), what the bot sent back (sink), what
// the model was asked (turns), when the bot was polled (the Telegram fake's polls), what memory holds at the
// end, and which daemon ran the bot's poll loop when (from the daemons' logs). The chat checks
// (checks-chat*.ts) read only this shape. All times are on the harness's clock.
import type { ChatMessage, ModelTurn } from './chat-workload.js';
import type { AppliedFault } from './nemesis-run.js';

/** One `sendMessage` of the bot to a workload chat. */
export interface ChatReply {
  chatId: string;
  text: string;
  at: number;
}

/** One getUpdates call as the Telegram fake saw it. */
interface PollRecord {
  startedAt: number;
  /** Absent when it was still open at the end of observation. */
  endedAt?: number;
  status?: number;
  /** Cut off with 409 by a second getUpdates of the bot while it was open. */
  conflict: boolean;
}

/** A row of `<schema>.memory_message` at the end of the run. */
export interface MemoryRow {
  id: number;
  /** `<agent>|<binding>|<plugin>|<instance>|<chat id>`. */
  sessionKey: string;
  role: string;
  content: string;
}

/** A time during which one daemon incarnation ran the bot's poll loop (from its logs). */
export interface PollerSpan {
  daemonId: string;
  /** When the harness read its `channel polling started` line. */
  from: number;
  /** Its `channel polling stopped` line, its kill, or its next start; absent while it still polls. */
  to?: number;
}

export interface ChatHistory {
  chats: { chat: string; chatId: string }[];
  /** Every message sent, in sending order. */
  messages: ChatMessage[];
  /** Every reply to a workload chat, in time order. */
  replies: ChatReply[];
  /** Every model request, in arrival order. */
  turns: ModelTurn[];
  /** Every getUpdates call of the bot, by start. */
  polls: PollRecord[];
  /** `memory_message` at the end; absent when it was not read. */
  memory?: MemoryRow[];
  pollers: PollerSpan[];
}

/** The fields of a daemon's log record the poller spans need (history.ts `DaemonLogRecord`). */
interface LogRecord {
  daemonId: string;
  at: number;
  msg: string;
  plugin?: string;
  instance?: string;
}

const POLLING_STARTED = 'channel polling started';
const POLLING_STOPPED = 'channel polling stopped';

/**
 * Which daemon ran the poll loop of `plugin`/`instance` when: a span opens at `channel polling started` and
 * closes at `channel polling stopped`, at a kill of its daemon (a killed process logs nothing), or at the
 * daemon's next `channel polling started`. (`daemon started` is no incarnation boundary: a daemon logs it
 * after its channels started.)
 */
export function pollerSpans(
  logs: readonly LogRecord[],
  faults: readonly AppliedFault[],
  who: { plugin: string; instance: string },
): PollerSpan[] {
  type Event = { at: number; daemonId: string; what: 'start' | 'stop' | 'gone' };
  const events: Event[] = [];
  for (const l of logs) {
    const ours = l.plugin === who.plugin && l.instance === who.instance;
    if (ours && l.msg === POLLING_STARTED) events.push({ at: l.at, daemonId: l.daemonId, what: 'start' });
    else if (ours && l.msg === POLLING_STOPPED) events.push({ at: l.at, daemonId: l.daemonId, what: 'stop' });
  }
  for (const f of faults)
    if (f.kind === 'kill' && f.daemonId !== undefined)
      events.push({ at: f.startedAt, daemonId: f.daemonId, what: 'gone' });
  events.sort((a, b) => a.at - b.at);
  const open = new Map<string, PollerSpan>();
  const spans: PollerSpan[] = [];
  for (const e of events) {
    const span = open.get(e.daemonId);
    if (span) {
      span.to = e.at;
      open.delete(e.daemonId);
    }
    if (e.what === 'start') {
      const s: PollerSpan = { daemonId: e.daemonId, from: e.at };
      spans.push(s);
      open.set(e.daemonId, s);
    }
  }
  return spans;
}

/** The daemon whose poll loop ran at `t` (the latest started, when the logs show more than one). */
export function pollerAt(spans: readonly PollerSpan[], t: number): string | undefined {
  return spans
    .filter((s) => s.from <= t && (s.to === undefined || s.to > t))
    .sort((a, b) => b.from - a.from)[0]?.daemonId;
}

export interface ChatHistoryInput {
  chats: readonly { chat: string; chatId: string }[];
  messages: readonly ChatMessage[];
  /** Everything the bot sent; replies to other chats (the pollers' items) are left out. */
  sink: readonly ChatReply[];
  turns: readonly ModelTurn[];
  polls: readonly PollRecord[];
  memory?: readonly MemoryRow[];
  logs: readonly LogRecord[];
  faults: readonly AppliedFault[];
  /** The bot's channel instance. */
  instance: { plugin: string; instance: string };
  /** Polls that started later are left out (teardown's own polls). */
  endedAt: number;
}

export function buildChatHistory(input: ChatHistoryInput): ChatHistory {
  const chatIds = new Set(input.chats.map((c) => c.chatId));
  return {
    chats: input.chats.map((c) => ({ ...c })),
    messages: [...input.messages],
    replies: input.sink
      .filter((r) => chatIds.has(r.chatId))
      .map((r) => ({ chatId: r.chatId, text: r.text, at: r.at }))
      .sort((a, b) => a.at - b.at),
    turns: [...input.turns].sort((a, b) => a.at - b.at),
    polls: input.polls
      .filter((p) => p.startedAt <= input.endedAt)
      .map((p) => ({ ...p }))
      .sort((a, b) => a.startedAt - b.startedAt),
    ...(input.memory ? { memory: [...input.memory].sort((a, b) => a.id - b.id) } : {}),
    pollers: pollerSpans(input.logs, input.faults, input.instance),
  };
}
