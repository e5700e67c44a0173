// The fault harness's chat workload: a driver that sends numbered messages from N chats to the Telegram fake
// (the source log), and a fake model whose answer names the message it answers and how many user messages
// came before it in the request, and which logs every request's history (the turn log). The replies reach
// the recording sink of workload.ts (the sink log); the checks are in checks-chat*.ts.
import type { FakeTelegram } from '@agent/channels/testing';
import {
  createFakeOpenAI,
  openaiText,
  type FakeReply,
  type RecordedRequest,
} from '@agent/model-providers/testing';
import { sleep } from '@agent/timers';
import { seededRandom } from './nemesis.js';

/** One message the driver sent. */
export interface ChatMessage {
  /** The workload's name of the chat: `c7`. */
  chat: string;
  /** Its Telegram chat id (what replies are addressed to). */
  chatId: string;
  /** 1, 2, 3… per chat. */
  seq: number;
  /** The fake's `update_id` of the message. */
  updateId: number;
  /** When the fake queued it (harness clock, epoch ms). */
  enqueuedAt: number;
}

/** `c7#12`: the whole text of a message. */
export const chatMessageText = (chat: string, seq: number): string => `${chat}#${seq}`;

/** `c7#12` → `{chat: 'c7', seq: 12}`; undefined for any other text. */
export function parseChatMessageText(text: string): { chat: string; seq: number } | undefined {
  const m = /^(c\d+)#(\d+)$/.exec(text);
  return m ? { chat: m[1]!, seq: Number(m[2]) } : undefined;
}

/** The model's answer to `c7#12` with 11 earlier user messages in its history: `re c7#12 after 11`. */
export const answerText = (messageText: string, earlier: number): string =>
  `re ${messageText} after ${earlier}`;

/** `re c7#12 after 11` → the message it answers and the history length it saw; undefined otherwise. */
export function parseAnswerText(text: string): { chat: string; seq: number; earlier: number } | undefined {
  const m = /^re (c\d+#\d+) after (\d+)$/.exec(text);
  const msg = m ? parseChatMessageText(m[1]!) : undefined;
  return msg && { ...msg, earlier: Number(m![2]) };
}

/** One model request: the turn of a message, with the user messages of the history it was given. */
export interface ModelTurn {
  /** When the fake model received the request (harness clock). */
  at: number;
  /** The last user message: the one the turn answers (`c7#12`). */
  text: string;
  /** The user messages before it, oldest first, as sent. */
  history: string[];
}

/** The turn a chat completions request body describes; undefined when it has no user message. */
export function turnOfRequest(body: unknown, at: number): ModelTurn | undefined {
  const messages = (body as { messages?: unknown } | undefined)?.messages;
  if (!Array.isArray(messages)) return undefined;
  const users = messages
    .filter((m): m is { role: string; content: string } => {
      const r = m as { role?: unknown; content?: unknown };
      return r.role === 'user' && typeof r.content === 'string';
    })
    .map((m) => m.content);
  const text = users.at(-1);
  return text === undefined ? undefined : { at, text, history: users.slice(0, -1) };
}

export interface ChatModel {
  /** The provider's `base_url`. */
  readonly baseUrl: string;
  /** Every request, in arrival order. */
  readonly turns: readonly ModelTurn[];
  close(): Promise<void>;
}

/**
 * The project's OpenAI fake answering every request from the request itself, after `delayMs` (a turn spends
 * that long on the model, so that faults find turns in flight).
 */
export async function createChatModel(o: { delayMs?: number; now?: () => number } = {}): Promise<ChatModel> {
  const now = o.now ?? Date.now;
  const fake = await createFakeOpenAI();
  const turns: ModelTurn[] = [];
  fake.setHandler((req: RecordedRequest): FakeReply => {
    const turn = turnOfRequest(req.body, now());
    if (turn) turns.push(turn);
    const text = turn ? answerText(turn.text, turn.history.length) : 'no user message';
    return { ...openaiText(text), delayMs: o.delayMs ?? 0 };
  });
  return { baseUrl: fake.baseUrl, turns, close: () => fake.close() };
}

export interface ChatDriver {
  /** The chats: name and Telegram chat id. */
  readonly chats: readonly { chat: string; chatId: string }[];
  /** Every message sent so far, in sending order (the source log). */
  readonly sent: readonly ChatMessage[];
  /** Sends one message now, from a chat drawn from the seeded generator. */
  sendOne(): ChatMessage;
  /** Sends one message every `intervalMs` until stopped. */
  startSending(): void;
  stopSending(): void;
}

export interface ChatDriverOptions {
  telegram: Pick<FakeTelegram, 'enqueueText'>;
  chats: number;
  /** Time between two messages (all chats together). */
  intervalMs: number;
  /** Draws the chat of each message: the same seed sends the same sequence of chats. */
  seed: number;
  /** Chat ids are `firstChatId`, `firstChatId + 1`, …; default 7000. */
  firstChatId?: number;
  now?: () => number;
}

/**
 * Sends `c<i>#<n>` from a chat drawn at random per message, so that a chat sometimes gets two messages in a
 * row (turns queued behind each other, where order is at stake) and often none for a while.
 */
export function createChatDriver(o: ChatDriverOptions): ChatDriver {
  const now = o.now ?? Date.now;
  const random = seededRandom(o.seed);
  const first = o.firstChatId ?? 7000;
  const chats = Array.from({ length: o.chats }, (_, i) => ({ chat: `c${i}`, chatId: String(first + i) }));
  const next = new Map(chats.map((c) => [c.chat, 1]));
  const sent: ChatMessage[] = [];
  let stop: AbortController | undefined;

  const sendOne = (): ChatMessage => {
    const c = chats[Math.floor(random() * chats.length)]!;
    const seq = next.get(c.chat)!;
    next.set(c.chat, seq + 1);
    const enqueuedAt = now();
    const updateId = o.telegram.enqueueText({ chatId: Number(c.chatId), text: chatMessageText(c.chat, seq) });
    const msg = { chat: c.chat, chatId: c.chatId, seq, updateId, enqueuedAt };
    sent.push(msg);
    return msg;
  };
  const loop = async (signal: AbortSignal): Promise<void> => {
    while (await sleep(o.intervalMs, signal)) sendOne();
  };

  return {
    chats,
    sent,
    sendOne,
    startSending() {
      if (stop) return;
      stop = new AbortController();
      void loop(stop.signal);
    },
    stopSending() {
      stop?.abort();
      stop = undefined;
    },
  };
}
