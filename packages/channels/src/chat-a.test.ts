import { Readable } from 'node:stream';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createInboundCollector, unusedBaseUrl, type InboundCollector } from '../test/helpers.js';
import { chatAChannel, signWebhookBody, type ChatAConfig, type ChatAInstance } from './chat-a.js';
import { ChannelError, ChannelSendError } from './errors.js';
import { createMemoryKeyValueStore } from './kv-store.js';
import {
  createFakeWhatsApp,
  statusWebhookPayload,
  textWebhookPayload,
  type FakeWhatsApp,
} from './testing/index.js';

const ACCESS_TOKEN = 'EAAGtest-access-token-7f3a';
const APP_SECRET = 'app-secret-5c1e';
const VERIFY_TOKEN = 'verify-me-91';
const PHONE_ID = '106540352242922';
const NOW = new Date('2026-01-02T03:04:05.000Z');

interface Harness {
  fake: FakeWhatsApp;
  channel: ChatAInstance;
  inbound: InboundCollector;
  logger: MemoryLogger;
  webhookUrl: string;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

async function setup(
  options: { config?: Partial<ChatAConfig>; inbound?: InboundCollector; start?: boolean } = {},
): Promise<Harness> {
  const fake = await createFakeWhatsApp({ accessToken: ACCESS_TOKEN });
  cleanups.push(() => fake.close());
  const logger = createMemoryLogger();
  const inbound = options.inbound ?? createInboundCollector();
  const channel = chatAChannel.create(
    'main',
    {
      base_url: fake.baseUrl,
      phone_number_id: PHONE_ID,
      access_token: ACCESS_TOKEN,
      app_secret: APP_SECRET,
      verify_token: VERIFY_TOKEN,
      listen: '127.0.0.1:0',
      ...options.config,
    },
    { logger, state: createMemoryKeyValueStore(), onInbound: inbound.onInbound, now: () => NOW },
  );
  let webhookUrl = '';
  if (options.start !== false) {
    await channel.start();
    cleanups.push(() => channel.stop());
    webhookUrl = `http://127.0.0.1:${channel.address?.port}${options.config?.path ?? '/webhook'}`;
  }
  return { fake, channel, inbound, logger, webhookUrl };
}

async function postWebhook(
  url: string,
  body: string,
  signature: string | undefined,
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['x-hub-signature-256'] = signature;
  const res = await request(url, { method: 'POST', headers, body });
  return { status: res.statusCode, text: await res.body.text() };
}

/** 2.5 MiB in 64 KiB chunks, sent without a Content-Length. */
async function* oversizedChunks(): AsyncGenerator<Buffer> {
  for (let i = 0; i < 40; i++) yield Buffer.alloc(64 * 1024, 0x20);
}

function textBody(...messages: { from: string; id: string; text: string; phoneNumberId?: string }[]): string {
  return JSON.stringify(textWebhookPayload(messages.map((m) => ({ phoneNumberId: PHONE_ID, ...m }))));
}

describe('chat_a webhook verification (GET)', () => {
  it('answers hub.challenge as text/plain 200 when the verify token matches', async () => {
    const { webhookUrl } = await setup();
    const res = await request(
      `${webhookUrl}?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444`,
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(await res.body.text()).toBe('1158201444');
  });

  it('refuses a wrong verify token or mode with 403', async () => {
    const { webhookUrl } = await setup();
    for (const query of [
      `hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1`,
      `hub.mode=subscribe&hub.challenge=1`,
      `hub.mode=unsubscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1`,
    ]) {
      const res = await request(`${webhookUrl}?${query}`);
      expect(res.statusCode).toBe(403);
      expect(await res.body.text()).not.toContain('1');
    }
  });

  it('answers 404 off the configured path and 405 for other methods', async () => {
    const { webhookUrl } = await setup({ config: { path: '/hooks/wa' } });
    const base = webhookUrl.replace('/hooks/wa', '');
    const other = await request(`${base}/webhook`);
    expect(other.statusCode).toBe(404);
    await other.body.dump();
    const put = await request(webhookUrl, { method: 'PUT', body: '{}' });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('GET, POST');
    await put.body.dump();
  });
});

describe('chat_a inbound messages (POST)', () => {
  it('delivers a correctly signed text message and answers 200 after it was accepted', async () => {
    const { webhookUrl, inbound } = await setup();
    const body = textBody({ from: '16315551181', id: 'wamid.IN1', text: 'hello agent' });
    const res = await postWebhook(webhookUrl, body, signWebhookBody(body, APP_SECRET));
    expect(res.status).toBe(200);
    expect(inbound.accepted).toEqual([
      {
        plugin: 'chat_a',
        instance: 'main',
        chatId: '16315551181',
        senderId: '16315551181',
        text: 'hello agent',
        messageId: 'wamid.IN1',
        receivedAt: '2026-01-02T03:04:05.000Z',
      },
    ]);
  });

  it('answers 401 to a bad or missing signature and never calls the handler', async () => {
    const { webhookUrl, inbound, logger } = await setup();
    const body = textBody({ from: '16315551181', id: 'wamid.IN2', text: 'forged' });
    const good = signWebhookBody(body, APP_SECRET);
    const attempts: (string | undefined)[] = [
      undefined,
      signWebhookBody(body, 'another-secret'),
      signWebhookBody(body + ' ', APP_SECRET),
      good.replace('sha256=', 'sha1='),
      good.slice(0, -2),
      'sha256=' + 'z'.repeat(64),
    ];
    for (const signature of attempts) {
      const res = await postWebhook(webhookUrl, body, signature);
      expect(res.status).toBe(401);
    }
    expect(inbound.calls).toEqual([]);
    expect(logger.find('webhook signature rejected')).toHaveLength(attempts.length);
    expect(logger.lines.join('\n')).not.toContain(APP_SECRET);
  });

  it('ignores statuses and non-text messages but still answers 200', async () => {
    const { webhookUrl, inbound } = await setup();
    const statuses = JSON.stringify(statusWebhookPayload(PHONE_ID, 'wamid.OUT1', '16315551181'));
    expect((await postWebhook(webhookUrl, statuses, signWebhookBody(statuses, APP_SECRET))).status).toBe(200);
    const image = textWebhookPayload([{ phoneNumberId: PHONE_ID, from: '1', id: 'wamid.IMG', text: '' }]);
    const value = (image.entry as { changes: { value: { messages: Record<string, unknown>[] } }[] }[])[0]!
      .changes[0]!.value;
    value.messages[0] = {
      from: '1',
      id: 'wamid.IMG',
      timestamp: '1',
      type: 'image',
      image: { id: 'media1' },
    };
    const imageBody = JSON.stringify(image);
    expect((await postWebhook(webhookUrl, imageBody, signWebhookBody(imageBody, APP_SECRET))).status).toBe(
      200,
    );
    expect(inbound.calls).toEqual([]);
  });

  it('answers 400 to a signed body that is not JSON, and keeps serving', async () => {
    const { webhookUrl, inbound } = await setup();
    const bad = '{"entry": [';
    expect((await postWebhook(webhookUrl, bad, signWebhookBody(bad, APP_SECRET))).status).toBe(400);
    const body = textBody({ from: '1', id: 'wamid.AFTER', text: 'still here' });
    expect((await postWebhook(webhookUrl, body, signWebhookBody(body, APP_SECRET))).status).toBe(200);
    expect(inbound.accepted.map((m) => m.messageId)).toEqual(['wamid.AFTER']);
  });

  it('answers 413 to an oversized body without calling the handler', async () => {
    const { webhookUrl, inbound } = await setup();
    const body = textBody({ from: '1', id: 'wamid.BIG', text: 'x'.repeat(1024 * 1024 + 10) });
    const res = await postWebhook(webhookUrl, body, signWebhookBody(body, APP_SECRET));
    expect(res.status).toBe(413);
    expect(inbound.calls).toEqual([]);
  });

  it('answers 413 to an oversized chunked body that declares no length', async () => {
    const { webhookUrl, inbound } = await setup();
    const res = await request(webhookUrl, {
      method: 'POST',
      headers: { 'x-hub-signature-256': 'sha256=' + '0'.repeat(64) },
      body: Readable.from(oversizedChunks()),
    }).catch((err: unknown) => err);
    // Either the 413 arrives, or the server cut the upload short: never a 2xx, never a handler call.
    if (!(res instanceof Error)) {
      expect((res as { statusCode: number }).statusCode).toBe(413);
    }
    expect(inbound.calls).toEqual([]);
    const body = textBody({ from: '1', id: 'wamid.OK', text: 'still serving' });
    expect((await postWebhook(webhookUrl, body, signWebhookBody(body, APP_SECRET))).status).toBe(200);
  });

  it('answers 500 when the runtime refuses a message, and the retry hands over only the rest', async () => {
    const inbound = createInboundCollector((_msg, call) => {
      if (call === 2) throw new Error('runtime queue full');
    });
    const { webhookUrl } = await setup({ inbound });
    const body = textBody(
      { from: '1', id: 'wamid.A', text: 'one' },
      { from: '2', id: 'wamid.B', text: 'two' },
    );
    const signature = signWebhookBody(body, APP_SECRET);
    expect((await postWebhook(webhookUrl, body, signature)).status).toBe(500);
    expect((await postWebhook(webhookUrl, body, signature)).status).toBe(200);
    expect(inbound.calls.map((m) => m.messageId)).toEqual(['wamid.A', 'wamid.B', 'wamid.B']);
    expect(inbound.accepted.map((m) => m.messageId)).toEqual(['wamid.A', 'wamid.B']);
  });

  it('ignores messages addressed to another phone number id', async () => {
    const { webhookUrl, inbound, logger } = await setup();
    const body = textBody({ from: '1', id: 'wamid.OTHER', text: 'hi', phoneNumberId: '999' });
    expect((await postWebhook(webhookUrl, body, signWebhookBody(body, APP_SECRET))).status).toBe(200);
    expect(inbound.calls).toEqual([]);
    expect(logger.find('inbound for another phone number ignored')).toHaveLength(1);
  });

  it('updateCredentials swaps the app secret used for signatures', async () => {
    const { webhookUrl, inbound, channel } = await setup();
    channel.updateCredentials({
      phone_number_id: PHONE_ID,
      access_token: ACCESS_TOKEN,
      app_secret: 'rotated-secret',
      verify_token: VERIFY_TOKEN,
      listen: '127.0.0.1:0',
    });
    const body = textBody({ from: '1', id: 'wamid.ROT', text: 'rotated' });
    expect((await postWebhook(webhookUrl, body, signWebhookBody(body, APP_SECRET))).status).toBe(401);
    expect((await postWebhook(webhookUrl, body, signWebhookBody(body, 'rotated-secret'))).status).toBe(200);
    expect(inbound.accepted).toHaveLength(1);
  });
});

describe('chat_a listener lifecycle', () => {
  it('reports CHANNEL_LISTEN_FAILED when the address is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => blocker.close(() => r())));
    const { port } = blocker.address() as AddressInfo;
    const { channel } = await setup({ config: { listen: `127.0.0.1:${port}` }, start: false });
    await expect(channel.start()).rejects.toMatchObject({ code: 'CHANNEL_LISTEN_FAILED' });
    expect(channel.address).toBeUndefined();
  });

  it('stop closes the listener and is idempotent', async () => {
    const { channel, webhookUrl } = await setup();
    await channel.stop();
    await channel.stop();
    expect(channel.address).toBeUndefined();
    await expect(request(webhookUrl)).rejects.toThrow();
  });

  it('refuses invalid instance config with CHANNEL_CONFIG_INVALID and names the field', () => {
    const deps = {
      logger: createMemoryLogger(),
      state: createMemoryKeyValueStore(),
      onInbound: async () => {},
    };
    const base = { phone_number_id: PHONE_ID, access_token: 'a', app_secret: 'b', verify_token: 'c' };
    const bad: unknown[] = [
      { ...base, access_token: '' },
      { ...base, listen: 'localhost' },
      { ...base, listen: '127.0.0.1:70000' },
      { ...base, path: 'webhook' },
      { ...base, unknown_field: 1 },
    ];
    for (const config of bad) {
      let error: unknown;
      try {
        chatAChannel.create('x', config as ChatAConfig, deps);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ChannelError);
      expect((error as ChannelError).code).toBe('CHANNEL_CONFIG_INVALID');
    }
  });
});

describe('chat_a outbound', () => {
  it('posts a text message to /{version}/{phone_number_id}/messages with the bearer token', async () => {
    const { channel, fake } = await setup({ start: false });
    const result = await channel.send({ to: '16315551181', text: 'Hello from the agent' });
    expect(result.ids).toEqual([fake.sends[0]?.id]);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({
      method: 'POST',
      path: `/v21.0/${PHONE_ID}/messages`,
      authorization: `Bearer ${ACCESS_TOKEN}`,
    });
    expect(JSON.parse(fake.requests[0]!.body)).toEqual({
      messaging_product: 'whatsapp',
      to: '16315551181',
      type: 'text',
      text: { body: 'Hello from the agent' },
    });
  });

  it('splits texts over 4096 characters into several messages', async () => {
    const { channel, fake } = await setup({ start: false });
    const text = `${'a'.repeat(3000)}\n${'b'.repeat(3000)}`;
    const result = await channel.send({ to: '1', text });
    expect(result.ids).toHaveLength(2);
    expect(fake.sends.map((s) => s.text)).toEqual(['a'.repeat(3000), 'b'.repeat(3000)]);
  });

  it('fails with CHANNEL_SEND_FAILED, the status and retryable for 429 and 5xx only', async () => {
    const { channel, fake, logger } = await setup({ start: false });
    for (const [status, retryable] of [
      [429, true],
      [500, true],
      [503, true],
      [400, false],
      [403, false],
    ] as const) {
      fake.failNext(status, { message: `(#131000) failure with ${ACCESS_TOKEN}` });
      const error = await channel.send({ to: '1', text: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChannelSendError);
      expect(error).toMatchObject({ code: 'CHANNEL_SEND_FAILED', status, retryable });
      expect((error as Error).message).toContain(String(status));
      expect((error as Error).message).not.toContain(ACCESS_TOKEN);
    }
    expect(logger.lines.join('\n')).not.toContain(ACCESS_TOKEN);
  });

  it('reports the ids of parts sent before a failure', async () => {
    const { channel, fake } = await setup({ start: false });
    fake.failNext(500, { skip: 1 });
    const error = (await channel
      .send({ to: '1', text: 'p'.repeat(5000) })
      .catch((e: unknown) => e)) as ChannelSendError;
    expect(error.code).toBe('CHANNEL_SEND_FAILED');
    expect(error.sentIds).toEqual([fake.sends[0]?.id]);
  });

  it('marks an unreachable API as retryable without a status', async () => {
    const { channel } = await setup({ start: false, config: { base_url: await unusedBaseUrl() } });
    const error = await channel.send({ to: '1', text: 'x' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CHANNEL_SEND_FAILED', retryable: true, status: undefined });
    expect((error as Error).message).not.toContain(ACCESS_TOKEN);
  });

  it('refuses an empty text or recipient with CHANNEL_MESSAGE_INVALID before any request', async () => {
    const { channel, fake } = await setup({ start: false });
    await expect(channel.send({ to: '1', text: '  ' })).rejects.toMatchObject({
      code: 'CHANNEL_MESSAGE_INVALID',
    });
    await expect(channel.send({ to: '', text: 'x' })).rejects.toMatchObject({
      code: 'CHANNEL_MESSAGE_INVALID',
    });
    expect(fake.requests).toEqual([]);
  });

  it('updateCredentials swaps the access token for the next send', async () => {
    const { channel, fake } = await setup({ start: false });
    channel.updateCredentials({
      base_url: fake.baseUrl,
      phone_number_id: PHONE_ID,
      access_token: 'rotated-token',
      app_secret: APP_SECRET,
      verify_token: VERIFY_TOKEN,
      listen: '127.0.0.1:0',
    });
    await expect(channel.send({ to: '1', text: 'x' })).rejects.toMatchObject({
      status: 401,
      retryable: false,
    });
    expect(fake.requests[0]?.authorization).toBe('Bearer rotated-token');
  });
});
