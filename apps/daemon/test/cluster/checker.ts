// The history checker of the cluster fault harness: the invariants J1-J5 and J7-J9 of the design, and C1-C7
// of the chat workload when it ran, as pure functions of a merged history (history.ts). A run passes when
// `violations` is empty.
import type { ChatHistory } from './chat-history.js';
import {
  chatLedger,
  checkChatDuplicates,
  checkChatOrder,
  checkChatReplies,
  firstAnswer,
  type ChatCheckParams,
} from './checks-chat.js';
import { checkChatHistory, checkChatMemory } from './checks-chat-memory.js';
import { checkOwnerTakeover, checkSingleConsumer } from './checks-chat-owner.js';
import { checkClock } from './checks-clock.js';
import { checkHygiene, checkReloads } from './checks-control.js';
import { checkDuplicates, checkLost, type CheckParams, type Violation } from './checks-delivery.js';
import { checkFencing, checkSlotCoverage, checkTakeover } from './checks-lease.js';
import type { History } from './history.js';

export type { CheckParams } from './checks-delivery.js';

interface CheckStats {
  published: number;
  received: number;
  duplicates: number;
  attributedDuplicates: number;
  audited: number;
  grants: number;
  faults: number;
  takeovers: number;
  maxTakeoverMs: number;
  latenessP99Ms: number;
  chat?: ChatStats;
}

interface ChatStats {
  messages: number;
  answered: number;
  /** Replies that answer no message (a failed turn's apology). */
  failureReplies: number;
  duplicates: number;
  attributedDuplicates: number;
  turns: number;
  turnsWithHistory: number;
  memoryExchanges: number;
  memoryRepeats: number;
  memoryMissing: number;
  polls: number;
  overlaps: number;
  excusedOverlaps: number;
  ownerKills: number;
  maxOwnerTakeoverMs: number;
}

export interface CheckResult {
  ok: boolean;
  violations: Violation[];
  stats: CheckStats;
}

/** C1-C7 over the chat part of a history. */
function checkChat(
  h: History,
  c: ChatHistory,
  p: ChatCheckParams,
): { violations: Violation[]; stats: ChatStats } {
  const l = chatLedger(c);
  const duplicates = checkChatDuplicates(h, c, l, p);
  const memory = checkChatMemory(h, c, l, p);
  const history = checkChatHistory(h, c, l, p);
  const single = checkSingleConsumer(h, c, p);
  const takeover = checkOwnerTakeover(h, c, p);
  return {
    violations: [
      ...checkChatReplies(h, c, l, p),
      ...checkChatOrder(h, c, l, p),
      ...duplicates.violations,
      ...single.violations,
      ...takeover.violations,
      ...memory.violations,
      ...history.violations,
    ],
    stats: {
      messages: c.messages.length,
      answered: c.messages.filter((m) => firstAnswer(l, m) !== undefined).length,
      failureReplies: [...l.failures.values()].flat().length,
      duplicates: duplicates.stats.duplicates,
      attributedDuplicates: duplicates.stats.attributed,
      turns: history.stats.turns,
      turnsWithHistory: history.stats.withHistory,
      memoryExchanges: memory.stats.exchanges,
      memoryRepeats: memory.stats.repeats,
      memoryMissing: memory.stats.missing,
      polls: c.polls.length,
      overlaps: single.overlaps,
      excusedOverlaps: single.excused,
      ownerKills: takeover.ownerKills,
      maxOwnerTakeoverMs: Math.max(0, ...takeover.takeoversMs),
    },
  };
}

export function checkHistory(h: History, p: CheckParams): CheckResult {
  const chat = h.chat && p.chat ? checkChat(h, h.chat, p.chat) : undefined;
  const duplicates = checkDuplicates(h, p);
  const takeover = checkTakeover(h, p);
  const violations = [
    ...checkLost(h),
    ...duplicates.violations,
    ...checkFencing(h),
    ...takeover.violations,
    ...checkSlotCoverage(h, p),
    ...checkReloads(h),
    ...checkClock(h),
    ...checkHygiene(h),
    ...(chat?.violations ?? []),
  ];
  return {
    ok: violations.length === 0,
    violations,
    stats: {
      published: h.published.length,
      received: new Set(h.sink.map((s) => s.itemId)).size,
      duplicates: duplicates.stats.duplicates,
      attributedDuplicates: duplicates.stats.attributed,
      audited: h.audit.length,
      grants: h.grants.length,
      faults: h.faults.length,
      takeovers: takeover.stats.takeoversMs.length,
      maxTakeoverMs: Math.max(0, ...takeover.stats.takeoversMs),
      latenessP99Ms: takeover.stats.latenessP99Ms,
      ...(chat ? { chat: chat.stats } : {}),
    },
  };
}

/** The verdict as text: the figures, then one line per violation. */
export function formatReport(r: CheckResult): string {
  const s = r.stats;
  const lines = [
    `history: ${s.published} published, ${s.received} received, ${s.duplicates} duplicates (${s.attributedDuplicates} attributed), ` +
      `${s.audited} audited deliveries, ${s.grants} lease grants, ${s.faults} faults`,
    `takeovers: ${s.takeovers} (max ${s.maxTakeoverMs} ms); tick lateness p99 outside faults: ${s.latenessP99Ms} ms`,
    ...(s.chat ? chatLines(s.chat) : []),
    r.ok ? 'verdict: PASS' : `verdict: FAIL (${r.violations.length} violations)`,
    ...r.violations.map((v) => `  ${v.invariant} ${v.message}`),
  ];
  return lines.join('\n');
}

function chatLines(c: ChatStats): string[] {
  return [
    `chat: ${c.messages} messages, ${c.answered} answered, ${c.failureReplies} failure replies, ` +
      `${c.duplicates} duplicate answers (${c.attributedDuplicates} attributed), ${c.turns} model turns (${c.turnsWithHistory} with history)`,
    `chat memory: ${c.memoryExchanges} exchanges, ${c.memoryRepeats} repeated, ${c.memoryMissing} missing; ` +
      `bot: ${c.polls} getUpdates, ${c.overlaps} overlaps (${c.excusedOverlaps} in trust windows), ` +
      `${c.ownerKills} poller kills (max ${c.maxOwnerTakeoverMs} ms to the next poll)`,
  ];
}
