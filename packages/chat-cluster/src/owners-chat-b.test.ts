// The owners with the real `chat_b` channel against a loopback Bot API: one getUpdates consumer at a time,
// and the next owner picks the updates up exactly where the last one confirmed them.
import { chatBChannel, chatBOffsetKey, type InboundMessage } from '@agent/channels';
import { createFakeTelegram } from '@agent/channels/testing';
import { migrateCluster } from '@agent/cluster';
import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import type { Pool } from '@agent/pg';
import { scratchSchema, type ScratchSchema, cuttableLink } from '@agent/pg/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { waitFor } from '../test/wait-for.js';
import { createChannelStateStore } from './channel-state.js';
import { migrateChatCluster } from './migrations.js';
import { createInboundOwners } from './owners.js';

const TOKEN = '123456789:AAH-owner_test_token';

let db: ScratchSchema;
const stops: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  db = await scratchSchema('cb');
  await migrateCluster(db.pool, db.schema);
  await migrateChatCluster(db.pool, db.schema);
});
afterEach(async () => {
  for (const stop of stops.splice(0).toReversed()) await stop().catch(() => {});
  await db.drop();
});

function daemon(holderId: string, baseUrl: string, leasePool: Pool) {
  const logger = createMemoryLogger();
  const owners = createInboundOwners({ pool: leasePool, schema: db.schema, holderId, ttlMs: 1500, logger });
  const state = createChannelStateStore({
    pool: db.pool,
    schema: db.schema,
    plugin: 'chat_b',
    fence: () => owners.fence('chat_b', 'bot1'),
  });
  const received: string[] = [];
  const channelLog: MemoryLogger = createMemoryLogger();
  const channel = chatBChannel.create(
    'bot1',
    { base_url: baseUrl, bot_token: TOKEN, poll_timeout_secs: 1 },
    {
      logger: channelLog,
      state,
      onInbound: async (msg: InboundMessage) => {
        received.push(msg.text);
      },
    },
  );
  stops.push(() => owners.stop());
  owners.own({
    plugin: 'chat_b',
    instance: 'bot1',
    start: () => channel.start(),
    stop: () => channel.stop(),
  });
  return { owners, state, received, channelLog };
}

it('chat_b: one poller at a time; after a crash the next owner resumes at the stored offset', async () => {
  const fake = await createFakeTelegram({ token: TOKEN });
  stops.push(() => fake.close());
  const link = await cuttableLink(db.url);
  const a = daemon('a#1', fake.baseUrl, db.openPool({ url: link.url, connectTimeoutMs: 300, max: 2 }));
  await waitFor('a to own the bot', () => a.owners.owned().length === 1);
  const b = daemon('b#1', fake.baseUrl, db.openPool());

  const before = ['one', 'two', 'three'].map((text) => fake.enqueueText({ chatId: 42, text }));
  await waitFor('a to take three updates', () => a.received.length === 3);
  const confirmed = String((before.at(-1) ?? 0) + 1);
  await waitFor(
    'the offset to be stored',
    async () => (await a.state.get(chatBOffsetKey('bot1'))) === confirmed,
  );

  await link.cut();
  await waitFor('b to own the bot', () => b.owners.owned().length === 1, 5000);
  expect(a.owners.owned()).toEqual([]);
  fake.enqueueText({ chatId: 42, text: 'four' });
  fake.enqueueText({ chatId: 42, text: 'five' });
  await waitFor('b to take two updates', () => b.received.length === 2);

  // Nothing lost, nothing twice, and Telegram never saw two pollers (it would answer one with 409).
  expect(a.received).toEqual(['one', 'two', 'three']);
  expect(b.received).toEqual(['four', 'five']);
  expect(fake.getUpdatesOffsets).toContain(Number(confirmed));
  expect([...a.channelLog.find('channel poll failed'), ...b.channelLog.find('channel poll failed')]).toEqual(
    [],
  );
  expect(b.channelLog.find('channel polling started')[0]?.fields).toMatchObject({
    offset: Number(confirmed),
  });
});
