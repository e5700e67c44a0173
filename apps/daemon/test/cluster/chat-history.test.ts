// The chat part of a history: who ran the bot's poll loop when, from the daemons' logs and the kills, and
// what the history keeps of the workload's logs.
import { describe, expect, it } from 'vitest';
import { buildChatHistory, pollerAt, pollerSpans } from './chat-history.js';

const BOT = { plugin: 'chat_b', instance: 'main' };
const started = (daemonId: string, at: number, instance = 'main') => ({
  daemonId,
  at,
  msg: 'channel polling started',
  plugin: 'chat_b',
  instance,
});

describe('poller spans', () => {
  it('open at a start and close at a stop, a kill of the daemon, or its next start', () => {
    const spans = pollerSpans(
      [
        started('a', 100),
        started('b', 150, 'other'),
        { daemonId: 'a', at: 300, msg: 'channel polling stopped', plugin: 'chat_b', instance: 'main' },
        started('b', 310),
        started('c', 320),
        // Logged after the channels started: no boundary.
        { daemonId: 'c', at: 330, msg: 'daemon started' },
        started('c', 700),
        started('a', 800),
      ],
      [{ kind: 'kill', daemonId: 'b', startedAt: 500, healedAt: 600 }],
      BOT,
    );
    expect(spans).toEqual([
      { daemonId: 'a', from: 100, to: 300 },
      { daemonId: 'b', from: 310, to: 500 },
      { daemonId: 'c', from: 320, to: 700 },
      { daemonId: 'c', from: 700 },
      { daemonId: 'a', from: 800 },
    ]);
    expect(pollerAt(spans, 50)).toBeUndefined();
    expect(pollerAt(spans, 200)).toBe('a');
    expect(pollerAt(spans, 400)).toBe('c');
    expect(pollerAt(spans, 600)).toBe('c');
    expect(pollerAt(spans, 750)).toBe('c');
    expect(pollerAt(spans, 900)).toBe('a');
  });
});

describe('chat history', () => {
  it('keeps replies to the workload chats only, in time order, and the polls started by the end', () => {
    const c = buildChatHistory({
      chats: [{ chat: 'c0', chatId: '7000' }],
      messages: [{ chat: 'c0', chatId: '7000', seq: 1, updateId: 1000, enqueuedAt: 10 }],
      sink: [
        { chatId: '7000', text: 're c0#1 after 0', at: 30 },
        { chatId: '4242', text: 'feed-0000/000001', at: 20 },
        { chatId: '7000', text: 'late', at: 25 },
      ],
      turns: [{ at: 15, text: 'c0#1', history: [] }],
      polls: [
        { startedAt: 50, conflict: false },
        { startedAt: 5, endedAt: 50, status: 200, conflict: false },
      ],
      memory: [
        { id: 2, sessionKey: 'k', role: 'assistant', content: 're c0#1 after 0' },
        { id: 1, sessionKey: 'k', role: 'user', content: 'c0#1' },
      ],
      logs: [started('a', 1)],
      faults: [],
      instance: BOT,
      endedAt: 40,
    });
    expect(c.replies).toEqual([
      { chatId: '7000', text: 'late', at: 25 },
      { chatId: '7000', text: 're c0#1 after 0', at: 30 },
    ]);
    expect(c.polls).toEqual([{ startedAt: 5, endedAt: 50, status: 200, conflict: false }]);
    expect(c.memory!.map((r) => r.id)).toEqual([1, 2]);
    expect(c.pollers).toEqual([{ daemonId: 'a', from: 1 }]);
  });
});
