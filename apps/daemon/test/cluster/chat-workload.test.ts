// The chat workload: message and answer texts, the driver against the Telegram fake, and the fake model
// answering from the request.
import { createFakeTelegram, type FakeTelegram } from '@agent/channels/testing';
import { sleep } from '@agent/timers';
import { afterEach, describe, expect, it } from 'vitest';
import {
  answerText,
  chatMessageText,
  createChatDriver,
  createChatModel,
  parseAnswerText,
  parseChatMessageText,
  turnOfRequest,
  type ChatModel,
} from './chat-workload.js';

let telegram: FakeTelegram | undefined;
let model: ChatModel | undefined;
afterEach(async () => {
  await telegram?.close();
  await model?.close();
  telegram = undefined;
  model = undefined;
});

describe('chat texts', () => {
  it('a message names its chat and number; an answer names the message and the history it saw', () => {
    expect(chatMessageText('c7', 12)).toBe('c7#12');
    expect(parseChatMessageText('c7#12')).toEqual({ chat: 'c7', seq: 12 });
    expect(answerText('c7#12', 11)).toBe('re c7#12 after 11');
    expect(parseAnswerText('re c7#12 after 11')).toEqual({ chat: 'c7', seq: 12, earlier: 11 });
    for (const bad of ['c7#', 'x7#1', 'c7#12 ', 'feed-0000/000001'])
      expect(parseChatMessageText(bad)).toBeUndefined();
    for (const bad of ['re c7#12', 're c7 after 1', 'Sorry, something went wrong.'])
      expect(parseAnswerText(bad)).toBeUndefined();
  });

  it('a request is the turn of its last user message, with the earlier user messages as its history', () => {
    const body = {
      model: 'm1',
      messages: [
        { role: 'system', content: 'harness' },
        { role: 'user', content: 'c1#1' },
        { role: 'assistant', content: 're c1#1 after 0' },
        { role: 'user', content: 'c1#2' },
        { role: 'assistant', content: 're c1#2 after 1' },
        { role: 'user', content: 'c1#3' },
      ],
    };
    expect(turnOfRequest(body, 5)).toEqual({ at: 5, text: 'c1#3', history: ['c1#1', 'c1#2'] });
    expect(turnOfRequest({ messages: [{ role: 'system', content: 's' }] }, 5)).toBeUndefined();
    expect(turnOfRequest(undefined, 5)).toBeUndefined();
  });
});

describe('chat driver', () => {
  it('sends numbered messages from seeded chats to the fake and logs each with its update id', async () => {
    telegram = await createFakeTelegram({ token: '1:t' });
    let clock = 100;
    const drive = (seed: number) =>
      createChatDriver({ telegram: telegram!, chats: 3, intervalMs: 60_000, seed, now: () => clock++ });
    const d = drive(42);
    expect(d.chats).toEqual([
      { chat: 'c0', chatId: '7000' },
      { chat: 'c1', chatId: '7001' },
      { chat: 'c2', chatId: '7002' },
    ]);
    for (let i = 0; i < 12; i++) d.sendOne();
    expect(d.sent.map((m) => m.enqueuedAt)).toEqual(Array.from({ length: 12 }, (_, i) => 100 + i));
    for (const c of d.chats) {
      const mine = d.sent.filter((m) => m.chat === c.chat);
      expect(mine.map((m) => m.seq)).toEqual(mine.map((_, i) => i + 1));
      expect(mine.every((m) => m.chatId === c.chatId)).toBe(true);
    }
    const res = await fetch(`${telegram.baseUrl}/bot1:t/getUpdates`);
    const updates = (
      (await res.json()) as {
        result: { update_id: number; message: { chat: { id: number }; text: string } }[];
      }
    ).result;
    expect(updates.map((u) => [u.update_id, String(u.message.chat.id), u.message.text])).toEqual(
      d.sent.map((m) => [m.updateId, m.chatId, chatMessageText(m.chat, m.seq)]),
    );
    // The same seed draws the same chats.
    const again = drive(42);
    for (let i = 0; i < 12; i++) again.sendOne();
    expect(again.sent.map((m) => m.chat)).toEqual(d.sent.map((m) => m.chat));
    expect(new Set(d.sent.map((m) => m.chat)).size).toBeGreaterThan(1);
  });

  it('sends on its interval only between start and stop', async () => {
    telegram = await createFakeTelegram({ token: '1:t' });
    const d = createChatDriver({ telegram, chats: 2, intervalMs: 20, seed: 1 });
    await sleep(60);
    expect(d.sent).toHaveLength(0);
    d.startSending();
    const t0 = Date.now();
    while (d.sent.length < 3 && Date.now() - t0 < 5000) await sleep(10);
    d.stopSending();
    const n = d.sent.length;
    expect(n).toBeGreaterThanOrEqual(3);
    await sleep(60);
    expect(d.sent).toHaveLength(n);
  });
});

describe('chat model', () => {
  it('answers each request naming its message and history length, and logs the turn', async () => {
    model = await createChatModel({ now: () => 77 });
    const res = await fetch(`${model.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm1',
        messages: [
          { role: 'user', content: 'c2#1' },
          { role: 'assistant', content: 're c2#1 after 0' },
          { role: 'user', content: 'c2#2' },
        ],
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).toBe('re c2#2 after 1');
    expect(model.turns).toEqual([{ at: 77, text: 'c2#2', history: ['c2#1'] }]);
  });
});
