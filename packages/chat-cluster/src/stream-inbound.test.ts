import { randomBytes } from 'node:crypto';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { InboundSettle } from '@agent/agent-runtime';
import type { InboundMessage } from '@agent/channels';
import { migrateCluster } from '@agent/cluster';
import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import type { Pool } from '@agent/pg';
import { scratchSchema, type ScratchSchema, cuttableLink } from '@agent/pg/testing';
import { sleep } from '@agent/timers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChatClusterError } from './errors.js';
import { startChatInbound, type ChatInbound } from './stream-inbound.js';
import { inboundNames, partitionOf, type InboundNames } from './stream.js';

const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
/** Short leases: a round every 400 ms, trust for 960 ms. */
const TTL = 1200;

interface Call {
  holder: string;
  msg: InboundMessage;
  settle: InboundSettle;
  /** When it was handed (`performance.now()`). */
  at: number;
}
/** What the runtime does with a message: by default its turn ends at once. */
type Behaviour = (call: Call) => void;
const done: Behaviour = (c) => c.settle('done');

interface Instance {
  inbound: ChatInbound;
  calls: Call[];
}

let db: ScratchSchema;
let prefix: string;
let names: InboundNames;
let nc: NatsConnection;
let jsm: JetStreamManager;
let logger: MemoryLogger;
let stops: (() => Promise<unknown>)[];

beforeEach(async () => {
  db = await scratchSchema('cs');
  await migrateCluster(db.pool, db.schema);
  prefix = `t${randomBytes(5).toString('hex')}`;
  names = inboundNames(prefix);
  nc = await connect({ servers: NATS_URL });
  jsm = await jetstreamManager(nc);
  logger = createMemoryLogger('info');
  stops = [];
});

afterEach(async () => {
  for (const stop of stops.toReversed()) await stop().catch(() => {});
  await jsm.streams.delete(names.stream).catch(() => {});
  await nc.close();
  await db.drop();
});

async function start(
  holder: string,
  o: {
    live?: () => number;
    pool?: Pool;
    servers?: string;
    behave?: Behaviour;
    ackWaitMs?: number;
    partitions?: number;
    configVersion?: () => number;
  } = {},
): Promise<Instance> {
  const calls: Call[] = [];
  const behave = o.behave ?? done;
  const inbound = await startChatInbound({
    servers: o.servers ?? NATS_URL,
    subjectPrefix: `${prefix}.`,
    pool: o.pool ?? db.pool,
    schema: db.schema,
    holderId: holder,
    liveMembers: async () => (o.live ?? (() => 1))(),
    partitions: o.partitions ?? 8,
    leaseTtlMs: TTL,
    ...(o.ackWaitMs === undefined ? {} : { ackWaitMs: o.ackWaitMs }),
    stream: { maxBytes: 8 * 1024 * 1024, maxAgeMs: 10 * 60_000 },
    ...(o.configVersion ? { configVersion: o.configVersion } : {}),
    logger: logger.child({ holder }),
    handle: async (msg, settle) => {
      const call = { holder, msg, settle, at: performance.now() };
      calls.push(call);
      behave(call);
    },
  });
  stops.push(() => inbound.stop());
  return { inbound, calls };
}

let seq = 0;
function message(chatId: string, text = `m${seq}`): InboundMessage {
  seq += 1;
  return {
    plugin: 'chat_b',
    instance: 'main',
    chatId,
    senderId: chatId,
    text,
    messageId: String(seq),
    receivedAt: new Date().toISOString(),
  };
}

/** A chat id whose partition is one of `among`. */
function chatIn(among: readonly number[], partitions: number, skip: readonly string[] = []): string {
  for (let i = 0; ; i++) {
    const id = `chat-${i}`;
    if (
      !skip.includes(id) &&
      among.includes(partitionOf({ plugin: 'chat_b', instance: 'main', chatId: id }, partitions))
    )
      return id;
  }
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const until = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

const consumerInfo = (p: number) => jsm.consumers.info(names.stream, names.consumer(p));

describe('chat inbound through JetStream', () => {
  it('the same message published twice is stored and handled once; ingress after stop is refused', async () => {
    const a = await start('a#1');
    const m = message('chat-1');
    await a.inbound.ingress(m);
    await a.inbound.ingress({ ...m, receivedAt: 'later' });
    const info = await jsm.streams.info(names.stream);
    expect(info.state.messages).toBe(1);
    expect(info.config).toMatchObject({ duplicate_window: 120e9, storage: 'file', retention: 'limits' });
    await waitFor('the message handled', () => a.calls.length === 1);
    const p = partitionOf(m, 8);
    await waitFor('its ack', async () => (await consumerInfo(p)).num_ack_pending === 0);
    expect(a.calls.map((c) => c.msg)).toEqual([m]);

    await a.inbound.stop();
    await expect(a.inbound.ingress(message('chat-1'))).rejects.toMatchObject({ code: 'CHAT_STREAM_STOPPED' });
  });

  it('a message accepted under a newer config version waits, with what follows in its chat, until this daemon runs it', async () => {
    let running = 1;
    const partitions = 2;
    const a = await start('a#1', { configVersion: () => running, partitions });
    const chat = chatIn([0], partitions);
    await a.inbound.ingress(message(chat, 'under v1'));
    await waitFor('the first message handled', () => a.calls.length === 1);
    // Another daemon, already on v2, accepts the next two: they are stamped v2.
    const newer = await start('b#1', { configVersion: () => 2, partitions, live: () => 2 });
    expect(newer.inbound.ownedPartitions()).toEqual([]);
    await newer.inbound.ingress(message(chat, 'under v2'));
    await a.inbound.ingress(message(chat, 'after it'));
    await sleep(1500);
    expect(a.calls.map((c) => c.msg.text)).toEqual(['under v1']);
    const waits = logger.find('chat inbound message waits for this daemon to run its config version');
    expect(waits.map((r) => r.fields)).toEqual([
      expect.objectContaining({ accepted_version: 2, running_version: 1 }),
    ]);
    running = 2;
    await waitFor('both handled in order', () => a.calls.length === 3);
    expect(a.calls.map((c) => c.msg.text)).toEqual(['under v1', 'under v2', 'after it']);
    expect(logger.find('chat inbound refused by the runtime, retrying')).toEqual([]);
    expect(
      logger.find('chat inbound message runs on an older config version than it was accepted under'),
    ).toEqual([]);
  });

  it('a message waits for a newer config version at most half the AckWait, then runs on the one here', async () => {
    const a = await start('a#1', { configVersion: () => 1, partitions: 1, ackWaitMs: 2000 });
    const newer = await start('b#1', { configVersion: () => 2, partitions: 1, live: () => 2 });
    const sent = performance.now();
    await newer.inbound.ingress(message('chat-1', 'under v2'));
    await waitFor('the message handled', () => a.calls.length === 1, 4000);
    expect(a.calls[0]!.at - sent).toBeGreaterThanOrEqual(1000);
    // Kept alive while it waited: not delivered again.
    await sleep(500);
    expect(a.calls).toHaveLength(1);
    const late = logger.find(
      'chat inbound message runs on an older config version than it was accepted under',
    );
    expect(late.map((r) => r.fields)).toEqual([
      expect.objectContaining({ accepted_version: 2, running_version: 1 }),
    ]);
  });

  it('two members: each owns half; every chat is handled in order, once, by its partition owner', async () => {
    const partitions = 32;
    const a = await start('a#1', { live: () => 2, partitions });
    const b = await start('b#1', { live: () => 2, partitions });
    await waitFor(
      'the partitions spread',
      () => a.inbound.ownedPartitions().length + b.inbound.ownedPartitions().length === 32,
    );
    const ownedA = a.inbound.ownedPartitions();
    const ownedB = b.inbound.ownedPartitions();
    expect(ownedA.length).toBe(16);
    expect(ownedB.length).toBe(16);
    expect(ownedA.filter((p) => ownedB.includes(p))).toEqual([]);

    const chatA = chatIn(ownedA, partitions);
    const chatB = chatIn(ownedB, partitions);
    const chats = [chatA, chatB, chatIn(ownedB, partitions, [chatB])];
    for (let n = 0; n < 20; n++) {
      for (const [i, chat] of chats.entries()) {
        await (i % 2 === n % 2 ? a : b).inbound.ingress(message(chat, `${chat}:${n}`));
      }
    }
    const all = () => [...a.calls, ...b.calls];
    await waitFor('60 messages handled', () => all().length === 60);
    const expected = Array.from({ length: 20 }, (_, n) => n);
    for (const chat of chats) {
      const calls = all().filter((c) => c.msg.chatId === chat);
      expect(calls.map((c) => Number(c.msg.text.split(':')[1]))).toEqual(expected);
      const owner = ownedA.includes(partitionOf(calls[0]!.msg, partitions)) ? 'a#1' : 'b#1';
      expect(new Set(calls.map((c) => c.holder))).toEqual(new Set([owner]));
    }
  });

  it('a newcomer gets half from the member that held all; when it stops, the other takes all back within the TTL', async () => {
    let live = 1;
    const a = await start('a#1', { live: () => live });
    expect(a.inbound.ownedPartitions()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    live = 2;
    const b = await start('b#1', { live: () => live });
    expect(b.inbound.ownedPartitions()).toEqual([]);
    await waitFor(
      'a hand-over',
      () => a.inbound.ownedPartitions().length === 4 && b.inbound.ownedPartitions().length === 4,
    );
    const ofB = b.inbound.ownedPartitions();
    expect(logger.find('chat inbound partitions handed over').length).toBeGreaterThan(0);

    live = 1;
    await b.inbound.stop();
    const stoppedAt = performance.now();
    await waitFor('a to own all', () => a.inbound.ownedPartitions().length === 8, TTL);
    expect(performance.now() - stoppedAt).toBeLessThan(TTL);
    const chat = chatIn(ofB, 8);
    const m = message(chat);
    await a.inbound.ingress(m);
    await waitFor('a to handle it', () => a.calls.some((c) => c.msg.messageId === m.messageId));
    expect(b.calls).toEqual([]);
  });

  it('a partition being handed over waits for its turn in flight, then goes at once', async () => {
    let live = 1;
    const a = await start('a#1', { live: () => live, behave: () => {} });
    // With a second member, 'a#1' gives up 0-3 (the end of its order 4 5 6 7 0 1 2 3).
    const chat = chatIn([0], 8);
    const m = message(chat);
    await a.inbound.ingress(m);
    await waitFor('a to get it', () => a.calls.length === 1);

    live = 2;
    const b = await start('b#1', { live: () => live });
    await waitFor('b to get the idle ones', () => b.inbound.ownedPartitions().length === 3);
    expect(b.inbound.ownedPartitions()).toEqual([1, 2, 3]);
    await a.inbound.ingress(message(chat)); // fetched by nobody while partition 0 drains
    await sleep(3 * (TTL / 3));
    expect(a.inbound.ownedPartitions()).toEqual([0, 4, 5, 6, 7]);

    a.calls[0]!.settle('done');
    await waitFor('b to get partition 0', () => b.inbound.ownedPartitions().includes(0), TTL);
    await waitFor('b to handle the message that waited', () => b.calls.length === 1);
    expect(b.calls[0]!.msg.chatId).toBe(chat);
    expect(b.calls[0]!.msg.messageId).not.toBe(m.messageId);
    expect(a.calls.length).toBe(1);
  });

  it('an abandoned turn is given back at stop and handled by the next owner at once', async () => {
    const a = await start('a#1', { behave: () => {} });
    const b = await start('b#1');
    expect(b.inbound.ownedPartitions()).toEqual([]);
    const m = message('chat-9');
    await b.inbound.ingress(m);
    await waitFor('a to get it', () => a.calls.length === 1);
    // The daemon's shutdown: stop fetching, the runtime abandons the turn, then stop.
    await a.inbound.pause();
    a.calls[0]!.settle('abandoned');
    await a.inbound.stop();
    // Far sooner than AckWait (30 s): the message was nak'd when its partition was given back.
    await waitFor('b to handle it', () => b.calls.length === 1, 3000);
    expect(b.calls[0]!.msg).toEqual(m);
    await waitFor('its ack', async () => (await consumerInfo(partitionOf(m, 8))).num_ack_pending === 0);
  });

  it('a turn handed back comes again after half the lease TTL; the last delivery may not hand it back, and is acked', async () => {
    // What the runtime does when it cannot read its memory: hand back while allowed, then answer.
    const a = await start('a#1', { behave: (c) => c.settle(c.settle.canRetry === true ? 'retry' : 'done') });
    const m = message('chat-4');
    await a.inbound.ingress(m);
    await waitFor('three deliveries', () => a.calls.length === 3);
    expect(a.calls.map((c) => c.msg)).toEqual([m, m, m]);
    expect(a.calls.map((c) => c.settle.canRetry)).toEqual([true, true, false]);
    for (const i of [1, 2]) expect(a.calls[i]!.at - a.calls[i - 1]!.at).toBeGreaterThanOrEqual(TTL / 2 - 100);
    const p = partitionOf(m, 8);
    await waitFor('its ack', async () => {
      const info = await consumerInfo(p);
      return info.num_ack_pending === 0 && info.num_pending === 0 && info.ack_floor.stream_seq === 1;
    });
    expect(logger.find('chat inbound message handed back, retrying').map((r) => r.fields.delivery)).toEqual([
      1, 2,
    ]);
    expect(a.calls.length).toBe(3);
  });

  it('a message handed back settled done on its next delivery is acked after two', async () => {
    let handed = 0;
    const a = await start('a#1', { behave: (c) => c.settle(handed++ === 0 ? 'retry' : 'done') });
    const m = message('chat-6');
    await a.inbound.ingress(m);
    await waitFor('two deliveries', () => a.calls.length === 2);
    expect(a.calls.map((c) => c.settle.canRetry)).toEqual([true, true]);
    const p = partitionOf(m, 8);
    await waitFor('its ack', async () => {
      const info = await consumerInfo(p);
      return info.num_ack_pending === 0 && info.num_pending === 0 && info.ack_floor.stream_seq === 1;
    });
    expect(a.calls.length).toBe(2);
  });

  it('a message handed back by a daemon that then goes is run by the next owner', async () => {
    const a = await start('a#1', { behave: (c) => c.settle('retry') });
    const b = await start('b#1');
    expect(b.inbound.ownedPartitions()).toEqual([]);
    const m = message('chat-8');
    await b.inbound.ingress(m);
    await waitFor('a to hand it back', () => a.calls.length === 1);
    await a.inbound.stop();
    await waitFor('b to run it', () => b.calls.length === 1, 3 * TTL);
    expect(b.calls[0]!.msg).toEqual(m);
    // Its delivery count goes on from a's deliveries (one, or two when a got it again before it stopped).
    expect(b.calls[0]!.settle.canRetry).toBe(a.calls.length + 1 < 3);
    await waitFor('its ack', async () => (await consumerInfo(partitionOf(m, 8))).num_ack_pending === 0);
  });

  it('a turn longer than AckWait is kept alive and, once done, never redelivered', async () => {
    const ackWaitMs = 1000;
    let ended = false;
    const a = await start('a#1', {
      ackWaitMs,
      behave: (c) =>
        void sleep(2.5 * ackWaitMs).then(() => {
          ended = true;
          c.settle('done');
        }),
    });
    const m = message('chat-3');
    await a.inbound.ingress(m);
    await waitFor('the turn to end', () => ended, 5000);
    const p = partitionOf(m, 8);
    await waitFor('its ack', async () => (await consumerInfo(p)).num_ack_pending === 0);
    // One more AckWait and a half: an acked message does not come again.
    await sleep(1.5 * ackWaitMs);
    expect(a.calls.length).toBe(1);
    const info = await consumerInfo(p);
    expect(info.num_redelivered).toBe(0);
    expect(info.config.ack_wait).toBe(ackWaitMs * 1e6);
    expect(info.config.max_ack_pending).toBe(256);
  });

  it('a holder that stops renewing loses its partitions; its unacked message goes to the next owner after AckWait', async () => {
    const ackWaitMs = 1500;
    const poolA = db.openPool({ max: 2 });
    const a = await start('a#1', { pool: poolA, ackWaitMs, behave: () => {} });
    const b = await start('b#1', { ackWaitMs });
    expect(a.inbound.ownedPartitions().length).toBe(8);
    const m = message('chat-5');
    await b.inbound.ingress(m);
    await waitFor('a to get it', () => a.calls.length === 1);

    // a's database goes away (as if it hung): no renewal, no release, the turn never ends.
    await poolA.end();
    await waitFor('b to handle it', () => b.calls.length === 1, 8000);
    expect(b.calls[0]!.msg).toEqual(m);
    expect(a.inbound.ownedPartitions()).toEqual([]);
    expect(logger.find('chat inbound partition lost').length).toBe(8);
    expect(a.calls.length).toBe(1);
  });

  it('a malformed message is dropped; a message the runtime refuses comes again', async () => {
    let refusals = 0;
    const a = await start('a#1', {
      behave: (c) => {
        if (refusals++ === 0)
          throw new Error('the agent runtime is not taking messages [RUNTIME_NOT_RUNNING]');
        c.settle('done');
      },
    });
    const m = message('chat-2');
    const p = partitionOf(m, 8);
    await jsm.jetstream().publish(names.subject(p), 'not json');
    await a.inbound.ingress(m);
    await waitFor('the message handled after the refusal', () => a.calls.length === 2, 5000);
    expect(a.calls.map((c) => c.msg)).toEqual([m, m]);
    expect(logger.find('chat inbound message malformed, dropped').length).toBe(1);
    expect(logger.find('chat inbound refused by the runtime, retrying').length).toBe(1);
    await waitFor('nothing left unacked', async () => (await consumerInfo(p)).num_ack_pending === 0);
  });

  // Refused for longer than AckWait: the messages waiting behind the first come again meanwhile, and those
  // copies are confirmed, not run twice.
  it.each([
    { ackWaitMs: 30_000, refusedMs: 1500 },
    { ackWaitMs: 1000, refusedMs: 2500 },
  ])(
    'messages refused while the runtime is not running wait in their order, and each is handled once (AckWait $ackWaitMs ms, refused $refusedMs ms)',
    async ({ ackWaitMs, refusedMs }) => {
      let running = false;
      const a = await start('a#1', {
        partitions: 1,
        ackWaitMs,
        behave: (c) => {
          if (!running) throw new Error('the agent runtime is not taking messages [RUNTIME_NOT_RUNNING]');
          c.settle('done');
        },
      });
      const sent = ['m1', 'm2', 'm3', 'm4'];
      for (const text of sent) await a.inbound.ingress(message('chat-1', text));
      await waitFor('a refusal', () => a.calls.length > 0);
      // Refused again and again for longer than one retry: only the first message is offered meanwhile.
      await sleep(refusedMs);
      expect(new Set(a.calls.map((c) => c.msg.text))).toEqual(new Set(['m1']));
      running = true;
      const refusedOffers = a.calls.length;
      await waitFor('every message handled', () => a.calls.length === refusedOffers + sent.length, 8000);
      // Redeliveries that crossed an ack would show up here.
      await sleep(1500);
      expect(a.calls.slice(refusedOffers).map((c) => c.msg.text)).toEqual(sent);
      expect(logger.find('chat inbound refused by the runtime, retrying')).toHaveLength(1);
      await waitFor('nothing left unacked', async () => (await consumerInfo(0)).num_ack_pending === 0);
    },
  );

  it('while NATS is unreachable ingress is refused at once, logged once; after it is back all goes on', async () => {
    const link = await cuttableLink(NATS_URL);
    stops.push(() => link.close());
    const a = await start('a#1', { servers: link.url });
    await a.inbound.ingress(message('chat-1'));
    await waitFor('the first message handled', () => a.calls.length === 1);
    void link.cut();
    const disconnected =
      'chat inbound disconnected from NATS: new chat messages are refused until it is back';
    await waitFor('the disconnect', () => logger.find(disconnected).length === 1);
    for (let i = 0; i < 3; i++) {
      const err = await a.inbound.ingress(message('chat-1')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChatClusterError);
      expect(err).toMatchObject({ code: 'CHAT_STREAM_UNAVAILABLE' });
    }
    expect(logger.records.filter((r) => r.level === 'warn').map((r) => r.msg)).toEqual([disconnected]);

    link.restore();
    await waitFor('the reconnect', () => logger.find('chat inbound reconnected to NATS').length === 1, 8000);
    const m = message('chat-1');
    await a.inbound.ingress(m);
    await waitFor(
      'the message after the outage handled',
      () => a.calls.some((c) => c.msg.messageId === m.messageId),
      8000,
    );
    expect(a.inbound.ownedPartitions().length).toBe(8);
  });
});
