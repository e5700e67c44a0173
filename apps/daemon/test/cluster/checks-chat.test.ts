// The chat checks C1-C7 on hand-made histories: a clean run passes, and each broken one fails exactly the
// check it breaks.
import { describe, expect, it } from 'vitest';
import type { ChatHistory, MemoryRow } from './chat-history.js';
import { answerText, chatMessageText } from './chat-workload.js';
import { checkHistory, formatReport, type CheckParams } from './checker.js';
import type { History } from './history.js';
import type { AppliedFault } from './nemesis-run.js';

const T = 1_700_000_000_000;
/** Redelivery window 10 + 6 + 3 = 19 s; trust window heal + 9 s; takeover bound 9 s. */
const P: CheckParams = {
  intervalMs: 1000,
  jitterMs: 0,
  ttlMs: 3000,
  heartbeatWindowMs: 3000,
  chat: { ownerTtlMs: 6000, ackWaitMs: 10_000, historyLimit: 40 },
};
const CHATS = [
  { chat: 'c0', chatId: '7000' },
  { chat: 'c1', chatId: '7001' },
];
const APOLOGY = 'Sorry, something went wrong and I could not answer. Please try again later.';
const sessionOf = (chatId: string): string => `a|0|chat_b|main|${chatId}`;

/**
 * Two chats taking turns: one message every 2 s from T+1 s to T+15 s (c0#1, c1#1, c0#2, … c1#4), each asked
 * of the model 200 ms after it was sent with its chat's earlier messages as history, answered 700 ms after it
 * was sent and stored in memory; daemon a polls the bot with one getUpdates per second from T to T+20 s.
 */
function clean(): History {
  const chat: ChatHistory = {
    chats: CHATS.map((c) => ({ ...c })),
    messages: [],
    replies: [],
    turns: [],
    polls: [],
    memory: [],
    pollers: [{ daemonId: 'a', from: T - 500 }],
  };
  for (let k = 0; k < 8; k++) {
    const { chat: name, chatId } = CHATS[k % 2]!;
    const seq = Math.floor(k / 2) + 1;
    const at = T + 1000 + 2000 * k;
    const text = chatMessageText(name, seq);
    const history = Array.from({ length: seq - 1 }, (_, i) => chatMessageText(name, i + 1));
    chat.messages.push({ chat: name, chatId, seq, updateId: 1000 + k, enqueuedAt: at });
    chat.turns.push({ at: at + 200, text, history });
    chat.replies.push({ chatId, text: answerText(text, history.length), at: at + 700 });
    chat.memory!.push(...pair(chat.memory!.length + 1, chatId, text, history.length));
  }
  for (let k = 0; k < 20; k++)
    chat.polls.push({ startedAt: T + 1000 * k, endedAt: T + 1000 * (k + 1), status: 200, conflict: false });
  return {
    published: [],
    sink: [],
    otherMessages: 0,
    audit: [],
    grants: [],
    faults: [],
    logs: [],
    reloads: [],
    skews: [],
    chat,
    quietFrom: T + 16_000,
    endedAt: T + 40_000,
  };
}

function pair(id: number, chatId: string, text: string, earlier: number): MemoryRow[] {
  return [
    { id, sessionKey: sessionOf(chatId), role: 'user', content: text },
    { id: id + 1, sessionKey: sessionOf(chatId), role: 'assistant', content: answerText(text, earlier) },
  ];
}

const chatOf = (h: History): ChatHistory => h.chat!;
const reply = (h: History, text: string) => chatOf(h).replies.find((r) => r.text.startsWith(`re ${text} `))!;
const turn = (h: History, text: string) => chatOf(h).turns.find((t) => t.text === text)!;
const fault = (kind: AppliedFault['kind'], daemonId: string, from: number, to: number): AppliedFault => ({
  kind,
  daemonId,
  startedAt: T + from,
  healedAt: T + to,
});

/** Memory without the exchange of `text`. */
function forget(h: History, text: string): void {
  const i = chatOf(h).memory!.findIndex((r) => r.content === text);
  chatOf(h).memory!.splice(i, 2);
}

/** Daemon a, which polls the bot, is killed at T+5.5 s and restarted at T+7 s; the polls from `gap` on are gone. */
function killPoller(h: History, gap: [number, number]): void {
  h.faults.push(fault('kill', 'a', 5500, 7000));
  // As pollerSpans has it: the kill ends a's span.
  chatOf(h).pollers[0]!.to = T + 5500;
  chatOf(h).polls = chatOf(h).polls.filter((p) => p.startedAt <= T + gap[0] || p.startedAt > T + gap[1]);
}

const cases: [string, (h: History) => void, string[], Partial<NonNullable<CheckParams['chat']>>?][] = [
  ['a clean run', () => {}, []],
  ['a message never answered', (h) => void chatOf(h).replies.splice(3, 1), ['C1']],
  [
    'a message sent after the quiet period began, not answered yet',
    (h) =>
      void chatOf(h).messages.push({
        chat: 'c0',
        chatId: '7000',
        seq: 5,
        updateId: 2000,
        enqueuedAt: T + 17_000,
      }),
    [],
  ],
  [
    'a message answered by a failure reply within a fault window, its exchange not stored',
    (h) => {
      Object.assign(reply(h, 'c1#2'), { text: APOLOGY });
      forget(h, 'c1#2');
      for (const t of ['c1#3', 'c1#4']) turn(h, t).history = turn(h, t).history.filter((x) => x !== 'c1#2');
      h.faults.push(fault('partition-db', 'b', 6000, 12_000));
    },
    [],
  ],
  [
    'a failure reply outside every fault window',
    (h) => {
      Object.assign(reply(h, 'c1#2'), { text: APOLOGY });
      forget(h, 'c1#2');
    },
    ['C1'],
  ],
  [
    'an answer naming a message never sent',
    (h) => void chatOf(h).replies.push({ chatId: '7000', text: answerText('c0#9', 0), at: T + 9000 }),
    ['C1'],
  ],
  [
    'an answer sent to another chat than its message’s',
    (h) => void chatOf(h).replies.push({ chatId: '7001', text: answerText('c0#1', 0), at: T + 9000 }),
    ['C1'],
  ],
  ['answers out of order outside faults', (h) => void (reply(h, 'c0#2').at = T + 9800), ['C2']],
  [
    'answers out of order within a fault window',
    (h) => ((reply(h, 'c0#2').at = T + 9800), void h.faults.push(fault('kill', 'b', 5500, 7000))),
    [],
  ],
  [
    'a duplicate answer without a fault',
    (h) => void chatOf(h).replies.push({ ...reply(h, 'c0#2'), at: T + 6000 }),
    ['C3'],
  ],
  [
    'a duplicate answer of a turn in flight at a pause',
    (h) => (
      h.faults.push(fault('pause', 'b', 5100, 11_100)),
      void chatOf(h).replies.push({ ...reply(h, 'c0#2'), at: T + 12_000 })
    ),
    [],
  ],
  [
    'two duplicate answers of one turn charged to one fault',
    (h) => (
      h.faults.push(fault('pause', 'b', 5100, 11_100)),
      void chatOf(h).replies.push(
        { ...reply(h, 'c0#2'), at: T + 12_000 },
        { ...reply(h, 'c0#2'), at: T + 12_500 },
      )
    ),
    ['C3'],
  ],
  [
    'a duplicate answer of a message answered long before the fault',
    (h) => (
      h.faults.push(fault('pause', 'b', 12_000, 13_000)),
      void chatOf(h).replies.push({ ...reply(h, 'c0#1'), at: T + 13_500 })
    ),
    ['C3'],
  ],
  [
    'a duplicate answer later than the redelivery window after the heal',
    (h) => (
      h.faults.push(fault('pause', 'b', 5100, 6000)),
      void chatOf(h).replies.push({ ...reply(h, 'c0#2'), at: T + 25_001 })
    ),
    ['C3'],
  ],
  [
    'two getUpdates open at once outside faults (a 409 conflict)',
    (h) => void Object.assign(chatOf(h).polls[5]!, { status: 409, conflict: true }),
    ['C4'],
  ],
  [
    'a getUpdates started while another was open, without a conflict',
    (h) =>
      void chatOf(h).polls.splice(6, 0, {
        startedAt: T + 5500,
        endedAt: T + 5600,
        status: 200,
        conflict: false,
      }),
    ['C4'],
  ],
  [
    'a 409 conflict within a pause’s trust window',
    (h) => (
      h.faults.push(fault('pause', 'a', 4000, 6000)),
      void Object.assign(chatOf(h).polls[5]!, { status: 409, conflict: true })
    ),
    [],
  ],
  [
    'a 409 conflict while the poller is cut off from PostgreSQL',
    (h) => (
      h.faults.push(fault('partition-db', 'a', 4000, 10_000)),
      void Object.assign(chatOf(h).polls[5]!, { status: 409, conflict: true })
    ),
    ['C4'],
  ],
  [
    'a 409 conflict after a pause’s trust window',
    (h) => (
      h.faults.push(fault('pause', 'a', 1000, 2000)),
      void Object.assign(chatOf(h).polls[12]!, { status: 409, conflict: true })
    ),
    ['C4'],
  ],
  [
    'a kill of the poller, the bot polled again within owner TTL + 3 s',
    (h) => (killPoller(h, [5500, 8500]), void chatOf(h).pollers.push({ daemonId: 'b', from: T + 8900 })),
    [],
  ],
  ['a kill of the poller, the bot polled again too late', (h) => killPoller(h, [5500, 15_000]), ['C5']],
  ['a kill of the poller, the bot never polled again', (h) => killPoller(h, [5500, 60_000]), ['C5']],
  [
    'a kill of a daemon that did not poll, the bot never polled again',
    (h) => (killPoller(h, [5500, 60_000]), void (h.faults[0]!.daemonId = 'b')),
    [],
  ],
  [
    'an exchange held twice without a fault',
    (h) => void chatOf(h).memory!.push(...pair(100, '7000', 'c0#2', 1)),
    ['C6'],
  ],
  [
    'an exchange held twice, its message in flight at a fault',
    (h) => (
      chatOf(h).memory!.push(...pair(100, '7000', 'c0#2', 1)),
      void h.faults.push(fault('pause', 'b', 5100, 7000))
    ),
    [],
  ],
  ['an answered message missing from memory outside faults', (h) => forget(h, 'c0#3'), ['C6']],
  [
    'an answered message missing from memory, in flight at a kill',
    (h) => (forget(h, 'c0#3'), void h.faults.push(fault('kill', 'b', 9100, 10_000))),
    [],
  ],
  [
    'a question stored without its answer',
    (h) => void chatOf(h).memory!.splice(chatOf(h).memory!.findIndex((r) => r.content === 'c0#2') + 1, 1),
    ['C6'],
  ],
  [
    'a chat’s memory holding another chat’s exchange',
    (h) =>
      void chatOf(h)
        .memory!.filter((r) => r.content === 'c1#1' || r.content === answerText('c1#1', 0))
        .forEach((r) => (r.sessionKey = sessionOf('7000'))),
    ['C6'],
  ],
  [
    'a question stored with the answer to another message',
    (h) =>
      void (chatOf(h).memory!.find((r) => r.content === answerText('c0#2', 1))!.content = answerText(
        'c0#1',
        0,
      )),
    ['C6'],
  ],
  ['a turn given no history after earlier answers', (h) => void (turn(h, 'c0#4').history = []), ['C7']],
  [
    'a turn missing one exchange answered before it',
    (h) => void (turn(h, 'c0#4').history = ['c0#1', 'c0#3']),
    ['C7'],
  ],
  [
    'a turn missing an exchange whose message was in flight at a fault, within its window',
    (h) => (
      (turn(h, 'c0#4').history = ['c0#1', 'c0#2']),
      void h.faults.push(fault('kill', 'b', 9100, 10_000))
    ),
    [],
  ],
  ['a turn given another chat’s message', (h) => void turn(h, 'c0#3').history.push('c1#1'), ['C7']],
  [
    'a turn about a message never sent',
    (h) => void chatOf(h).turns.push({ at: T + 9000, text: 'c0#9', history: [] }),
    ['C7'],
  ],
  [
    'a full history (max_messages 4) leaves out the oldest exchanges',
    (h) => void (turn(h, 'c0#4').history = ['c0#2', 'c0#3']),
    [],
    { historyLimit: 4 },
  ],
];

describe('chat checks', () => {
  it.each(cases)('%s', (_name, mutate, failing, chatParams) => {
    const h = clean();
    mutate(h);
    const r = checkHistory(h, { ...P, chat: { ...P.chat!, ...chatParams } });
    expect([...new Set(r.violations.map((v) => v.invariant))].sort(), formatReport(r)).toEqual(failing);
    expect(r.ok).toBe(failing.length === 0);
  });

  it('runs only when the history has a chat part and the parameters chat bounds', () => {
    const h = clean();
    chatOf(h).replies = [];
    expect(checkHistory(h, { ...P, chat: undefined }).ok).toBe(true);
    expect(checkHistory({ ...h, chat: undefined }, P).ok).toBe(true);
    expect(checkHistory(h, P).ok).toBe(false);
  });

  it('counts what it saw and reports every violation on its own line', () => {
    const h = clean();
    killPoller(h, [5500, 8500]);
    chatOf(h).pollers.push({ daemonId: 'b', from: T + 8900 });
    chatOf(h).replies.push({ ...reply(h, 'c0#2'), at: T + 7500 }, { ...reply(h, 'c0#1'), at: T + 7600 });
    h.faults.push(fault('pause', 'b', 9000, 10_000));
    Object.assign(chatOf(h).polls[8]!, { status: 409, conflict: true });
    const r = checkHistory(h, P);
    expect(r.stats.chat).toEqual({
      messages: 8,
      answered: 8,
      failureReplies: 0,
      duplicates: 2,
      attributedDuplicates: 1,
      turns: 8,
      turnsWithHistory: 6,
      memoryExchanges: 8,
      memoryRepeats: 0,
      memoryMissing: 0,
      polls: 17,
      overlaps: 1,
      excusedOverlaps: 1,
      ownerKills: 1,
      maxOwnerTakeoverMs: 3500,
    });
    expect(formatReport(r).split('\n')).toEqual([
      'history: 0 published, 0 received, 0 duplicates (0 attributed), 0 audited deliveries, 0 lease grants, 2 faults',
      'takeovers: 0 (max 0 ms); tick lateness p99 outside faults: 0 ms',
      'chat: 8 messages, 8 answered, 0 failure replies, 2 duplicate answers (1 attributed), 8 model turns (6 with history)',
      'chat memory: 8 exchanges, 0 repeated, 0 missing; bot: 17 getUpdates, 1 overlaps (1 in trust windows), 1 poller kills (max 3500 ms to the next poll)',
      'verdict: FAIL (1 violations)',
      `  C3 1 duplicate answers not attributable to a fault: c0#1 at ${new Date(T + 7600).toISOString()}`,
    ]);
  });
});
