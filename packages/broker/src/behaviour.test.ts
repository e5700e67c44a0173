import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NATS_URL, collector, privateDir, rejectionOf, syncErrorOf, uniqueSubject } from '../test/helpers.js';
import {
  connectLocalBroker,
  createLocalBroker,
  createNatsBroker,
  isBrokerError,
  requestWithAck,
  type Broker,
  type BrokerMessage,
} from './index.js';

/** Two ends of one broker: the daemon's and a client's (the same object for the in-process bus). */
interface Pair {
  daemon: Broker;
  client: Broker;
  daemonLog: MemoryLogger;
  clientLog: MemoryLogger;
  close(): Promise<void>;
}

async function inProcess(): Promise<Pair> {
  const log = createMemoryLogger();
  const broker = await createLocalBroker({ logger: log });
  return { daemon: broker, client: broker, daemonLog: log, clientLog: log, close: () => broker.close() };
}

async function overSocket(): Promise<Pair> {
  const tmp = await privateDir();
  const daemonLog = createMemoryLogger();
  const clientLog = createMemoryLogger();
  const daemon = await createLocalBroker({ socketPath: `${tmp.dir}/broker.sock`, logger: daemonLog });
  const client = await connectLocalBroker({ socketPath: `${tmp.dir}/broker.sock`, logger: clientLog });
  return {
    daemon,
    client,
    daemonLog,
    clientLog,
    close: async () => {
      await client.close();
      await daemon.close();
      await tmp.remove();
    },
  };
}

async function connectOrExplain(name: string, logger: MemoryLogger): Promise<Broker> {
  try {
    return await createNatsBroker({ url: NATS_URL, name, logger });
  } catch (err) {
    throw new Error(
      `NATS is not reachable at ${NATS_URL}: start a server (nats-server -a 127.0.0.1 -p 4222) or set NATS_URL. ${(err as Error).message}`,
      { cause: err },
    );
  }
}

async function overNats(): Promise<Pair> {
  const daemonLog = createMemoryLogger();
  const clientLog = createMemoryLogger();
  const daemon = await connectOrExplain('broker-test-daemon', daemonLog);
  const client = await connectOrExplain('broker-test-client', clientLog);
  return {
    daemon,
    client,
    daemonLog,
    clientLog,
    close: async () => {
      await client.close();
      await daemon.close();
    },
  };
}

const kinds: Array<[string, () => Promise<Pair>]> = [
  ['local in-process', inProcess],
  ['local over the Unix socket', overSocket],
  ['nats', overNats],
];

describe.each(kinds)('broker behaviour (%s)', (_kind, setup) => {
  let pair: Pair;
  beforeEach(async () => {
    pair = await setup();
  });
  afterEach(async () => {
    await pair.close();
  });

  it('delivers published JSON from the daemon to a client subscriber, as a copy', async () => {
    const subject = uniqueSubject('test.pub');
    const got = collector();
    pair.client.subscribe(subject, got.handler);
    await pair.client.flush();
    const data = { text: 'grüße\nline two', n: 42, list: [1, null, true], nested: { deep: ['x'] } };
    await pair.daemon.publish(subject, data);
    const [msg] = await got.next(1);
    expect(msg).toEqual({ subject, data });
    expect(msg?.data).not.toBe(data);
  });

  it('delivers from a client to a daemon subscriber; undefined travels as null', async () => {
    const subject = uniqueSubject('test.up');
    const got = collector();
    pair.daemon.subscribe(subject, got.handler);
    await pair.daemon.flush();
    await pair.client.publish(subject, undefined);
    await pair.client.publish(subject, 'second');
    const msgs = await got.next(2);
    expect(msgs.map((m) => m.data)).toEqual([null, 'second']);
  });

  it('matches "*" for one token and a final ">" for the rest', async () => {
    const base = uniqueSubject('test.wild');
    const star = collector();
    const rest = collector();
    pair.client.subscribe(`${base}.*.done`, star.handler);
    pair.client.subscribe(`${base}.>`, rest.handler);
    await pair.client.flush();
    await pair.daemon.publish(`${base}.a.done`, 1);
    await pair.daemon.publish(`${base}.a.b.done`, 2);
    await pair.daemon.publish(`${base}.b.done`, 3);
    const all = await rest.next(3);
    const stars = await star.next(2);
    expect(all.map((m) => m.data)).toEqual([1, 2, 3]);
    expect(stars.map((m) => m.subject)).toEqual([`${base}.a.done`, `${base}.b.done`]);
  });

  it('stops delivery after unsubscribe', async () => {
    const subject = uniqueSubject('test.unsub');
    const marker = uniqueSubject('test.marker');
    const got = collector();
    const markers = collector();
    const sub = pair.client.subscribe(subject, got.handler);
    pair.client.subscribe(marker, markers.handler);
    await pair.client.flush();
    await pair.daemon.publish(subject, 'before');
    await got.next(1);
    sub.unsubscribe();
    sub.unsubscribe();
    await pair.client.flush();
    await pair.daemon.publish(subject, 'after');
    await pair.daemon.publish(marker, 'done');
    await markers.next(1);
    expect(got.messages.map((m) => m.data)).toEqual(['before']);
    expect(sub.subject).toBe(subject);
  });

  it('request/reply: the daemon answers on msg.reply', async () => {
    const subject = uniqueSubject('svc.echo');
    pair.daemon.subscribe(subject, async (msg) => {
      expect(msg.reply).toMatch(/\S/);
      await pair.daemon.publish(msg.reply as string, { echoed: msg.data });
    });
    await pair.daemon.flush();
    await expect(pair.client.request(subject, { ping: 1 }, { timeoutMs: 3000 })).resolves.toEqual({
      echoed: { ping: 1 },
    });
  });

  it('a request nobody listens to fails fast with BROKER_NO_RESPONDERS', async () => {
    const subject = uniqueSubject('svc.nobody');
    const started = Date.now();
    const err = await rejectionOf(pair.client.request(subject, {}, { timeoutMs: 5000 }));
    expect(err.code).toBe('BROKER_NO_RESPONDERS');
    expect(err.message).toContain(subject);
    expect(Date.now() - started).toBeLessThan(200);
  });

  it('a request nobody answers fails with BROKER_TIMEOUT after the timeout', async () => {
    const subject = uniqueSubject('svc.silent');
    const got = collector();
    pair.daemon.subscribe(subject, got.handler);
    await pair.daemon.flush();
    const started = Date.now();
    const err = await rejectionOf(pair.client.request(subject, 'hello?', { timeoutMs: 150 }));
    expect(err.code).toBe('BROKER_TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(got.messages).toHaveLength(1);
  });

  it('reload pattern: requestWithAck takes the ack with our request_id and ignores others', async () => {
    const subject = uniqueSubject('control.reload');
    const ackSubject = `${subject}.ack`;
    const seen: BrokerMessage[] = [];
    pair.daemon.subscribe(subject, async (msg) => {
      seen.push(msg);
      const { request_id } = msg.data as { request_id: string };
      // Someone else's ack first, then ours; this daemon answers on the ack subject only.
      await pair.daemon.publish(ackSubject, { request_id: 'someone-else', version: 1 });
      await pair.daemon.publish(ackSubject, { request_id, version: 2, applied: ['ana'] });
    });
    await pair.daemon.flush();
    const ack = await requestWithAck(pair.client, {
      subject,
      ackSubject,
      data: { request_id: 'req-1', requested_by: 'cli' },
      timeoutMs: 3000,
    });
    expect(ack).toEqual({ request_id: 'req-1', version: 2, applied: ['ana'] });
    expect(seen[0]?.data).toEqual({ request_id: 'req-1', requested_by: 'cli' });
  });

  it('reload pattern: requestWithAck also accepts an answer on the reply subject and adds request_id', async () => {
    const subject = uniqueSubject('control.reload');
    pair.daemon.subscribe(subject, async (msg) => {
      const { request_id } = msg.data as { request_id: string };
      await pair.daemon.publish(msg.reply as string, { request_id, version: 3 });
    });
    await pair.daemon.flush();
    const ack = (await requestWithAck(pair.client, {
      subject,
      ackSubject: `${subject}.ack`,
      data: { requested_by: 'cli' },
      timeoutMs: 3000,
    })) as { request_id: string; version: number };
    expect(ack.version).toBe(3);
    expect(ack.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reload pattern: plain subscribe to the ack subject and publish the request', async () => {
    const subject = uniqueSubject('control.reload');
    const ackSubject = `${subject}.ack`;
    pair.daemon.subscribe(subject, async (msg) => {
      await pair.daemon.publish(ackSubject, {
        request_id: (msg.data as { request_id: string }).request_id,
        version: 4,
      });
    });
    await pair.daemon.flush();
    const acks = collector();
    pair.client.subscribe(ackSubject, acks.handler);
    await pair.client.publish(subject, { request_id: 'plain-1', requested_by: 'cli' });
    const [ack] = await acks.next(1);
    expect(ack?.data).toEqual({ request_id: 'plain-1', version: 4 });
  });

  it('requestWithAck fails fast with BROKER_NO_RESPONDERS when no daemon listens', async () => {
    const subject = uniqueSubject('control.reload');
    const started = Date.now();
    const err = await rejectionOf(
      requestWithAck(pair.client, { subject, ackSubject: `${subject}.ack`, data: {}, timeoutMs: 5000 }),
    );
    expect(err.code).toBe('BROKER_NO_RESPONDERS');
    expect(Date.now() - started).toBeLessThan(200);
  });

  it('requestWithAck reports BROKER_TIMEOUT when the daemon never acks', async () => {
    const subject = uniqueSubject('control.reload');
    pair.daemon.subscribe(subject, () => {});
    await pair.daemon.flush();
    const err = await rejectionOf(
      requestWithAck(pair.client, { subject, ackSubject: `${subject}.ack`, data: {}, timeoutMs: 150 }),
    );
    expect(err.code).toBe('BROKER_TIMEOUT');
  });

  it('a failing handler is logged and later messages still arrive', async () => {
    const subject = uniqueSubject('test.throw');
    const got = collector();
    let calls = 0;
    pair.client.subscribe(subject, (msg) => {
      calls += 1;
      if (calls === 1) throw new Error('sync boom');
      if (calls === 2) return Promise.reject(new Error('async boom'));
      got.handler(msg);
    });
    await pair.client.flush();
    for (const n of [1, 2, 3]) await pair.daemon.publish(subject, n);
    const [third] = await got.next(1);
    expect(third?.data).toBe(3);
    await vi.waitFor(() =>
      expect(pair.clientLog.find('broker handler failed').map((r) => r.fields.error)).toEqual([
        'sync boom',
        'async boom',
      ]),
    );
  });

  it('round-trips a payload close to the 1 MiB limit and refuses one above it', async () => {
    const subject = uniqueSubject('test.big');
    const got = collector();
    pair.daemon.subscribe(subject, got.handler);
    await pair.daemon.flush();
    const big = 'x'.repeat(1000 * 1000);
    await pair.client.publish(subject, big);
    const [msg] = await got.next(1, 5000);
    expect(msg?.data).toBe(big);
    const err = await rejectionOf(pair.client.publish(subject, 'y'.repeat(1024 * 1024)));
    expect(err.code).toBe('BROKER_PAYLOAD_TOO_LARGE');
  });

  it('refuses data that is not JSON and subjects that are not valid', async () => {
    expect((await rejectionOf(pair.client.publish('ok.subject', { n: 1n }))).code).toBe('BROKER_BAD_PAYLOAD');
    expect((await rejectionOf(pair.client.publish('a..b', 1))).code).toBe('BROKER_INVALID_SUBJECT');
    expect((await rejectionOf(pair.client.publish('a.*', 1))).code).toBe('BROKER_INVALID_SUBJECT');
    expect((await rejectionOf(pair.client.request('a b', 1))).code).toBe('BROKER_INVALID_SUBJECT');
    expect(syncErrorOf(() => pair.client.subscribe('a.>.b', () => {})).code).toBe('BROKER_INVALID_SUBJECT');
  });

  it('close fails a pending request with BROKER_CLOSED, and later calls too', async () => {
    const subject = uniqueSubject('svc.slow');
    pair.daemon.subscribe(subject, () => {});
    await pair.daemon.flush();
    const pending = pair.client.request(subject, {}, { timeoutMs: 5000 });
    const outcome = rejectionOf(pending);
    await pair.client.close();
    const err = await outcome;
    expect(err.code).toBe('BROKER_CLOSED');
    expect(isBrokerError(err)).toBe(true);
    expect((await rejectionOf(pair.client.publish(subject, 1))).code).toBe('BROKER_CLOSED');
    expect((await rejectionOf(pair.client.request(subject, 1))).code).toBe('BROKER_CLOSED');
  });
});

// Needs two separate ends: with one in-process bus, closing the sender also removes the receiver.
describe.each(kinds.filter(([name]) => name !== 'local in-process'))('broker close (%s)', (_kind, setup) => {
  let pair: Pair;
  beforeEach(async () => {
    pair = await setup();
  });
  afterEach(async () => {
    await pair.close();
  });

  it('a publish right before close still reaches the other side', async () => {
    const subject = uniqueSubject('test.lastword');
    const got = collector();
    pair.daemon.subscribe(subject, got.handler);
    await pair.daemon.flush();
    await pair.client.publish(subject, 'last word');
    await pair.client.close();
    const [msg] = await got.next(1);
    expect(msg?.data).toBe('last word');
  });
});
