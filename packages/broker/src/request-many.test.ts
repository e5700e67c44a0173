import { afterEach, describe, expect, it } from 'vitest';
import { NATS_URL, uniqueSubject } from '../test/helpers.js';
import { createLocalBroker, createNatsBroker, gatherAcks, type Broker } from './index.js';

const open: Broker[] = [];
afterEach(async () => {
  for (const b of open.splice(0)) await b.close();
});

async function nats(name: string): Promise<Broker> {
  const b = await createNatsBroker({ url: NATS_URL, name });
  open.push(b);
  return b;
}

/** A daemon that answers a reload request on the reply subject and on the ack subject. */
async function daemon(id: string, subject: string, ackSubject: string, delayMs = 0): Promise<Broker> {
  const b = await nats(id);
  b.subscribe(subject, async (msg) => {
    const req = msg.data as { request_id: string };
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    const ack = { request_id: req.request_id, daemon_id: id, config_version: 7 };
    await b.publish(ackSubject, ack);
    if (msg.reply) await b.publish(msg.reply, ack);
  });
  await b.flush();
  return b;
}

describe('requestMany and gatherAcks', () => {
  it('NATS: every answer within the wait, ended early by maxMessages or until', async () => {
    const subject = uniqueSubject('many');
    for (const id of ['a', 'b', 'c']) {
      const b = await nats(id);
      b.subscribe(subject, (msg) => void b.publish(msg.reply!, { id }));
      await b.flush();
    }
    const cli = await nats('cli');
    const all = (await cli.requestMany(subject, {}, { maxWaitMs: 400 })) as { id: string }[];
    expect(all.map((a) => a.id).sort()).toEqual(['a', 'b', 'c']);
    const t0 = performance.now();
    expect(await cli.requestMany(subject, {}, { maxWaitMs: 3000, maxMessages: 2 })).toHaveLength(2);
    expect(
      await cli.requestMany(subject, {}, { maxWaitMs: 3000, until: (xs) => xs.length === 3 }),
    ).toHaveLength(3);
    expect(await cli.requestMany(subject, {}, { maxWaitMs: 3000, stallMs: 150 })).toHaveLength(3);
    expect(performance.now() - t0).toBeLessThan(2000);
    await expect(cli.requestMany(uniqueSubject('nobody'), {}, { maxWaitMs: 3000 })).rejects.toMatchObject({
      code: 'BROKER_NO_RESPONDERS',
    });
  });

  it('gatherAcks: three answer, one expected member is silent and named missing after the timeout', async () => {
    const subject = uniqueSubject('control.reload');
    const ackSubject = `${subject}.ack`;
    await daemon('a', subject, ackSubject);
    await daemon('b', subject, ackSubject, 50);
    await daemon('c', subject, ackSubject);
    const silent = await nats('d');
    silent.subscribe(subject, () => {});
    await silent.flush();
    const cli = await nats('cli');
    const r = await gatherAcks(cli, {
      subject,
      ackSubject,
      data: {},
      expected: ['a', 'b', 'c', 'd'],
      timeoutMs: 600,
    });
    expect(r.acks.map((a) => a['daemon_id']).sort()).toEqual(['a', 'b', 'c']);
    expect(r.acks.every((a) => a['request_id'] === r.requestId)).toBe(true);
    expect(r.missing).toEqual(['d']);
    expect(r.unexpected).toEqual([]);
    expect(r.elapsedMs).toBeGreaterThanOrEqual(590);
  });

  it('gatherAcks ends as soon as every expected member answered, and names unexpected ones', async () => {
    const subject = uniqueSubject('control.reload');
    const ackSubject = `${subject}.ack`;
    for (const id of ['a', 'b', 'c']) await daemon(id, subject, ackSubject);
    const cli = await nats('cli');
    const r = await gatherAcks(cli, {
      subject,
      ackSubject,
      data: { request_id: 'r1' },
      expected: ['a', 'b'],
      timeoutMs: 5000,
    });
    expect(r.requestId).toBe('r1');
    expect(r.missing).toEqual([]);
    expect(r.elapsedMs).toBeLessThan(2000);
    expect(r.acks.length).toBeGreaterThanOrEqual(2);
  });

  it('gatherAcks with nobody listening: every expected member is missing, at once', async () => {
    const cli = await nats('cli');
    const r = await gatherAcks(cli, {
      subject: uniqueSubject('control.reload'),
      data: {},
      expected: ['a'],
      timeoutMs: 5000,
    });
    expect(r).toMatchObject({ acks: [], missing: ['a'] });
    expect(r.elapsedMs).toBeLessThan(2000);
  });

  it('the local bus returns its single answer, or none after the wait', async () => {
    const b = await createLocalBroker();
    open.push(b);
    b.subscribe(
      'control.reload',
      (msg) =>
        void b.publish(msg.reply!, {
          daemon_id: 'solo',
          request_id: (msg.data as { request_id: string }).request_id,
        }),
    );
    expect(await b.requestMany('control.reload', { request_id: 'x' }, { maxWaitMs: 500 })).toEqual([
      { daemon_id: 'solo', request_id: 'x' },
    ]);
    b.subscribe('quiet', () => {});
    expect(await b.requestMany('quiet', {}, { maxWaitMs: 50 })).toEqual([]);
    const r = await gatherAcks(b, {
      subject: 'control.reload',
      data: {},
      expected: ['solo'],
      timeoutMs: 1000,
    });
    expect(r).toMatchObject({ missing: [], unexpected: [] });
    expect(r.acks).toHaveLength(1);
  });
});
