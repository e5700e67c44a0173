import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLogger, type Logger, type MemoryLogger } from '@agent/log';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createInboundCollector,
  createRecordingSleep,
  unusedBaseUrl,
  waitUntil,
  type InboundCollector,
} from '../test/helpers.js';
import { chatBChannel, chatBOffsetKey, type ChatBConfig, type ChatBInstance } from './chat-b.js';
import type { KeyValueStore } from './contract.js';
import { ChannelSendError } from './errors.js';
import { createFileKeyValueStore, createMemoryKeyValueStore } from './kv-store.js';
import { createFakeTelegram, type FakeTelegram } from './testing/index.js';

const TOKEN = '123456789:AAH-secret_token_value';
const NOW = new Date('2026-01-02T03:04:05.000Z');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

async function startFake(): Promise<FakeTelegram> {
  const fake = await createFakeTelegram({ token: TOKEN });
  cleanups.push(() => fake.close());
  return fake;
}

interface Harness {
  channel: ChatBInstance;
  inbound: InboundCollector;
  logger: MemoryLogger;
  sleeps: number[];
  state: KeyValueStore;
}

function createChannel(
  baseUrl: string,
  options: { config?: Partial<ChatBConfig>; inbound?: InboundCollector; state?: KeyValueStore } = {},
): Harness {
  const logger = createMemoryLogger();
  const inbound = options.inbound ?? createInboundCollector();
  const { sleeps, sleep } = createRecordingSleep();
  const state = options.state ?? createMemoryKeyValueStore();
  const channel = chatBChannel.create(
    'bot1',
    { base_url: baseUrl, bot_token: TOKEN, ...options.config },
    { logger, state, onInbound: inbound.onInbound, now: () => NOW, sleep },
  );
  cleanups.push(() => channel.stop());
  return { channel, inbound, logger, sleeps, state };
}

describe('chat_b inbound (getUpdates long polling)', () => {
  it('delivers text updates in order and persists update_id + 1', async () => {
    const fake = await startFake();
    const first = fake.enqueueText({ chatId: 42, fromId: 7, text: 'hello' });
    const second = fake.enqueueText({ chatId: -100200, fromId: 8, text: 'group hi' });
    const { channel, inbound, state } = createChannel(fake.baseUrl);
    await channel.start();
    await inbound.waitForAccepted(2);
    await channel.stop();
    expect(inbound.accepted).toEqual([
      {
        plugin: 'chat_b',
        instance: 'bot1',
        chatId: '42',
        senderId: '7',
        text: 'hello',
        messageId: expect.any(String),
        receivedAt: '2026-01-02T03:04:05.000Z',
      },
      expect.objectContaining({ chatId: '-100200', senderId: '8', text: 'group hi' }),
    ]);
    expect(await state.get(chatBOffsetKey('bot1'))).toBe(String(second + 1));
    expect(first).toBe(second - 1);
    const poll = fake.requests.find((r) => r.method === 'getUpdates');
    expect(poll?.path).toBe('/bot<token>/getUpdates');
    expect(poll?.query).toEqual({ timeout: '25' });
  });

  it('a new instance on the same store does not re-deliver after a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'chat-b-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'chat_b.json');
    const fake = await startFake();
    fake.enqueueText({ chatId: 1, text: 'one' });
    const second = fake.enqueueText({ chatId: 1, text: 'two' });

    // Stop right after the second message was accepted, before the next getUpdates could confirm
    // it at the vendor: only the persisted offset prevents a re-delivery.
    let firstChannel: ChatBInstance | undefined;
    let stopped: Promise<void> | undefined;
    const inbound1 = createInboundCollector((_msg, call) => {
      if (call === 2) stopped = firstChannel?.stop();
    });
    const run1 = createChannel(fake.baseUrl, { inbound: inbound1, state: createFileKeyValueStore(path) });
    firstChannel = run1.channel;
    await run1.channel.start();
    await inbound1.waitForAccepted(2);
    await stopped;
    expect(fake.getUpdatesOffsets).toEqual([undefined]);

    const third = fake.enqueueText({ chatId: 1, text: 'three' });
    const run2 = createChannel(fake.baseUrl, { state: createFileKeyValueStore(path) });
    await run2.channel.start();
    await run2.inbound.waitForAccepted(1);
    await run2.channel.stop();
    expect(fake.getUpdatesOffsets[1]).toBe(second + 1);
    expect(run2.inbound.calls.map((m) => m.text)).toEqual(['three']);
    expect(await createFileKeyValueStore(path).get(chatBOffsetKey('bot1'))).toBe(String(third + 1));
  });

  it('skips non-text updates but confirms them', async () => {
    const fake = await startFake();
    const edited = fake.enqueueUpdate({
      edited_message: { message_id: 5, chat: { id: 1, type: 'private' }, date: 1, edit_date: 2, text: 'x' },
    });
    const sticker = fake.enqueueUpdate({
      message: { message_id: 6, chat: { id: 1, type: 'private' }, date: 1, sticker: { file_id: 'f' } },
    });
    const text = fake.enqueueText({ chatId: 1, text: 'plain' });
    const { channel, inbound, state } = createChannel(fake.baseUrl);
    await channel.start();
    await inbound.waitForAccepted(1);
    await channel.stop();
    expect(inbound.calls.map((m) => m.text)).toEqual(['plain']);
    expect([edited, sticker, text]).toEqual([text - 2, text - 1, text]);
    expect(await state.get(chatBOffsetKey('bot1'))).toBe(String(text + 1));
  });

  it('keeps the offset when the runtime refuses an update, and hands it over again', async () => {
    const fake = await startFake();
    const id = fake.enqueueText({ chatId: 1, text: 'retry me' });
    const inbound = createInboundCollector((_msg, call) => {
      if (call === 1) throw new Error('runtime busy');
    });
    const { channel, state, sleeps, logger } = createChannel(fake.baseUrl, { inbound });
    await channel.start();
    await inbound.waitForAccepted(1);
    await channel.stop();
    expect(inbound.calls.map((m) => m.text)).toEqual(['retry me', 'retry me']);
    expect(sleeps[0]).toBe(1000);
    expect(logger.find('inbound not accepted')).toHaveLength(1);
    expect(await state.get(chatBOffsetKey('bot1'))).toBe(String(id + 1));
  });

  it('backs off exponentially on poll errors and recovers, without logging the token', async () => {
    const fake = await startFake();
    fake.failGetUpdates(500, 2);
    fake.failGetUpdates(409, 1);
    fake.enqueueText({ chatId: 1, text: 'after errors' });
    const { channel, inbound, sleeps, logger } = createChannel(fake.baseUrl);
    await channel.start();
    await inbound.waitForAccepted(1);
    await channel.stop();
    expect(sleeps).toEqual([1000, 2000, 4000]);
    const failures = logger.find('channel poll failed');
    expect(failures.map((r) => r.fields.status)).toEqual([500, 500, 409]);
    expect(failures[2]?.fields.hint).toMatch(/deleteWebhook/);
    expect(logger.lines.join('\n')).not.toContain(TOKEN);
    expect(logger.lines.join('\n')).not.toContain('AAH-secret');
  });

  it('new credentials end a poll backoff at once', async () => {
    const fake = await startFake();
    fake.enqueueText({ chatId: 1, text: 'with the right token' });
    const logger = createMemoryLogger();
    const inbound = createInboundCollector();
    let woken = 0;
    const channel = chatBChannel.create(
      'bot1',
      { base_url: fake.baseUrl, bot_token: '123456789:AAH-an_old_token' },
      {
        logger,
        state: createMemoryKeyValueStore(),
        onInbound: inbound.onInbound,
        now: () => NOW,
        // A backoff that only ends when aborted: without the wake the poll would never come back.
        sleep: (_ms, signal) =>
          new Promise((_resolve, reject) =>
            signal?.addEventListener('abort', () => {
              woken++;
              reject(signal.reason as Error);
            }),
          ),
      },
    );
    cleanups.push(() => channel.stop());
    await channel.start();
    await waitUntil(() => logger.find('channel poll failed').length === 1);
    expect(logger.find('channel poll failed')[0]?.fields.status).toBe(401);
    channel.updateCredentials({ base_url: fake.baseUrl, bot_token: TOKEN });
    await inbound.waitForAccepted(1);
    expect(woken).toBe(1);
  });

  it('new credentials that arrive while a poll is failing end the backoff after it', async () => {
    const fake = await startFake();
    fake.enqueueText({ chatId: 1, text: 'with the right token' });
    const memory = createMemoryLogger();
    const inbound = createInboundCollector();
    let channel: ChatBInstance | undefined;
    // The rotation lands between the failed call and its backoff: where the poll logs the failure.
    const rotating = (l: Logger): Logger => ({
      ...l,
      warn: (msg, fields) => {
        l.warn(msg, fields);
        if (msg === 'channel poll failed')
          channel?.updateCredentials({ base_url: fake.baseUrl, bot_token: TOKEN });
      },
      child: (f) => rotating(l.child(f)),
    });
    channel = chatBChannel.create(
      'bot1',
      { base_url: fake.baseUrl, bot_token: '123456789:AAH-an_old_token' },
      {
        logger: rotating(memory),
        state: createMemoryKeyValueStore(),
        onInbound: inbound.onInbound,
        now: () => NOW,
        // A backoff that only ends when aborted, at once when it already was.
        sleep: (_ms, signal) =>
          new Promise((_resolve, reject) => {
            if (signal?.aborted) reject(signal.reason as Error);
            signal?.addEventListener('abort', () => reject(signal.reason as Error));
          }),
      },
    );
    cleanups.push(() => channel.stop());
    await channel.start();
    await inbound.waitForAccepted(1);
    expect(memory.find('channel poll failed').map((r) => r.fields.status)).toEqual([401]);
  });

  it('passes allowed_updates as a JSON array', async () => {
    const fake = await startFake();
    fake.enqueueText({ chatId: 1, text: 'x' });
    const { channel, inbound } = createChannel(fake.baseUrl, {
      config: { allowed_updates: ['message'], poll_timeout_secs: 5 },
    });
    await channel.start();
    await inbound.waitForAccepted(1);
    await channel.stop();
    expect(fake.requests[0]?.query).toEqual({ timeout: '5', allowed_updates: '["message"]' });
  });

  it('stop() aborts a pending long poll promptly', async () => {
    const fake = await startFake();
    const { channel, logger } = createChannel(fake.baseUrl);
    await channel.start();
    await waitUntil(() => fake.getUpdatesOffsets.length === 1);
    const started = Date.now();
    await channel.stop();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(logger.find('channel polling stopped')).toHaveLength(1);
    expect(logger.find('channel poll failed')).toEqual([]);
  });

  it('refuses to start on a stored offset that is not an integer', async () => {
    const fake = await startFake();
    const state = createMemoryKeyValueStore({ [chatBOffsetKey('bot1')]: 'abc' });
    const { channel } = createChannel(fake.baseUrl, { state });
    await expect(channel.start()).rejects.toMatchObject({ code: 'CHANNEL_STATE_CORRUPT' });
  });

  it('refuses a malformed bot token with CHANNEL_CONFIG_INVALID without echoing it', () => {
    const deps = {
      logger: createMemoryLogger(),
      state: createMemoryKeyValueStore(),
      onInbound: async () => {},
    };
    let error: unknown;
    try {
      chatBChannel.create('x', { bot_token: 'not a token/secret' }, deps);
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'CHANNEL_CONFIG_INVALID' });
    expect((error as Error).message).not.toContain('not a token/secret');
  });
});

describe('chat_b outbound (sendMessage)', () => {
  it('sends chat_id and text and returns the message id', async () => {
    const fake = await startFake();
    const { channel } = createChannel(fake.baseUrl);
    const result = await channel.send({ to: '42', text: 'Hello' });
    expect(fake.sends).toEqual([{ chatId: '42', text: 'Hello', messageId: 1 }]);
    expect(result.ids).toEqual(['1']);
    expect(fake.requests[0]?.path).toBe('/bot<token>/sendMessage');
    expect(JSON.parse(fake.requests[0]!.body)).toEqual({ chat_id: '42', text: 'Hello' });
  });

  it('honours 429 retry_after, then succeeds', async () => {
    const fake = await startFake();
    fake.rateLimitSends(3, 2);
    const { channel, sleeps, logger } = createChannel(fake.baseUrl);
    const result = await channel.send({ to: '42', text: 'patience' });
    expect(sleeps).toEqual([3000, 3000]);
    expect(fake.requests.filter((r) => r.method === 'sendMessage')).toHaveLength(3);
    expect(fake.sends.map((s) => s.text)).toEqual(['patience']);
    expect(result.ids).toHaveLength(1);
    expect(logger.find('channel send rate limited').map((r) => r.fields.retry_after)).toEqual([3, 3]);
  });

  it('gives up after a bounded number of 429 answers with a retryable error', async () => {
    const fake = await startFake();
    fake.rateLimitSends(1, 10);
    const { channel, sleeps } = createChannel(fake.baseUrl);
    const error = await channel.send({ to: '42', text: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelSendError);
    expect(error).toMatchObject({ code: 'CHANNEL_SEND_FAILED', status: 429, retryable: true });
    expect(sleeps).toEqual([1000, 1000, 1000]);
    expect(fake.requests).toHaveLength(4);
  });

  it('does not wait when retry_after exceeds the limit', async () => {
    const fake = await startFake();
    fake.rateLimitSends(3600);
    const { channel, sleeps } = createChannel(fake.baseUrl);
    await expect(channel.send({ to: '42', text: 'x' })).rejects.toMatchObject({
      status: 429,
      retryable: true,
    });
    expect(sleeps).toEqual([]);
  });

  it('splits long texts at newlines, each part within 4096 characters', async () => {
    const fake = await startFake();
    const { channel } = createChannel(fake.baseUrl);
    const lines = Array.from({ length: 120 }, (_, i) => `line ${i} ${'z'.repeat(60)}`);
    const text = lines.join('\n');
    const result = await channel.send({ to: '42', text });
    expect(result.ids.length).toBeGreaterThan(1);
    expect(fake.sends.every((s) => s.text.length <= 4096)).toBe(true);
    expect(fake.sends.map((s) => s.text).join('\n')).toBe(text);
    expect(fake.sends.every((s) => s.text.startsWith('line '))).toBe(true);
  });

  it('never splits a surrogate pair', async () => {
    const fake = await startFake();
    const { channel } = createChannel(fake.baseUrl);
    const text = 'a' + '😀'.repeat(3000); // 6001 code units, no spaces
    await channel.send({ to: '42', text });
    expect(fake.sends).toHaveLength(2);
    expect(fake.sends[0]!.text.length).toBe(4095);
    expect(fake.sends.map((s) => s.text).join('')).toBe(text);
  });

  it('fails with CHANNEL_SEND_FAILED and no token in message or logs on other errors', async () => {
    const fake = await startFake();
    const wrong = createChannel(fake.baseUrl, { config: { bot_token: '987:wrong_token' } });
    const unauthorized = await wrong.channel.send({ to: '42', text: 'x' }).catch((e: unknown) => e);
    expect(unauthorized).toMatchObject({ code: 'CHANNEL_SEND_FAILED', status: 401, retryable: false });
    expect((unauthorized as Error).message).toContain('Unauthorized');
    expect((unauthorized as Error).message).not.toContain('987:wrong_token');

    const down = createChannel(await unusedBaseUrl());
    const unreachable = await down.channel.send({ to: '42', text: 'x' }).catch((e: unknown) => e);
    expect(unreachable).toMatchObject({ code: 'CHANNEL_SEND_FAILED', status: undefined, retryable: true });
    expect((unreachable as Error).message).not.toContain(TOKEN);
    expect(wrong.logger.lines.join('\n')).not.toContain('wrong_token');
    expect(down.logger.lines.join('\n')).not.toContain(TOKEN);
  });
});
