// Two deployments on one real NATS server, each with its own subject prefix: neither sees the other's
// messages, requests and their answers work within one, and handlers see subjects without the prefix.
import { afterEach, describe, expect, it } from 'vitest';
import { NATS_URL, collector, uniqueSubject } from '../test/helpers.js';
import { connectBroker, createBroker, resolveBrokerConfig, type Broker } from './index.js';

let open: Broker[] = [];
afterEach(async () => {
  for (const b of open) await b.close();
  open = [];
});

async function brokerWith(prefix: string | undefined, role: 'daemon' | 'cli' = 'daemon'): Promise<Broker> {
  const file = { kind: 'nats', url: NATS_URL, ...(prefix === undefined ? {} : { subject_prefix: prefix }) };
  const config = resolveBrokerConfig(file, { dataDir: '.' });
  const b = role === 'daemon' ? await createBroker(config) : await connectBroker(config);
  open.push(b);
  return b;
}

describe('broker.yaml subject_prefix', () => {
  it('keeps two deployments apart and answers requests within one', async () => {
    const deployment = uniqueSubject('dep');
    const other = uniqueSubject('dep');
    const daemonA = await brokerWith(deployment);
    const daemonB = await brokerWith(other);
    const bare = await brokerWith(undefined);
    const cli = await brokerWith(deployment, 'cli');
    const seenA = collector();
    const seenB = collector();
    const seenBare = collector();
    daemonA.subscribe('control.reload', (msg) => {
      seenA.handler(msg);
      if (msg.reply) void daemonA.publish(msg.reply, { from: 'a' });
    });
    daemonB.subscribe('control.reload', (msg) => {
      seenB.handler(msg);
      if (msg.reply) void daemonB.publish(msg.reply, { from: 'b' });
    });
    bare.subscribe(`${deployment}.>`, seenBare.handler);
    await Promise.all([daemonA.flush(), daemonB.flush(), bare.flush()]);

    expect(await cli.request('control.reload', { n: 1 }, { timeoutMs: 2000 })).toEqual({ from: 'a' });
    expect(await cli.requestMany('control.reload', { n: 2 }, { maxWaitMs: 300 })).toEqual([{ from: 'a' }]);
    await cli.publish('control.reload', { n: 3 });
    await seenA.next(3);
    expect(seenA.messages.map((m) => m.subject)).toEqual([
      'control.reload',
      'control.reload',
      'control.reload',
    ]);
    expect(seenB.messages).toEqual([]);
    // On the wire the subject carries the prefix: an unprefixed client subscribed under it sees all three.
    await seenBare.next(3);
    expect(seenBare.messages.map((m) => m.subject)).toEqual([
      `${deployment}.control.reload`,
      `${deployment}.control.reload`,
      `${deployment}.control.reload`,
    ]);
  });

  it('refuses a prefix that is no subject, and a prefix on the local broker, naming the file', () => {
    for (const bad of ['a..b', 'a b', '*', 'a.>', '_INBOX', 'x'.repeat(65)])
      expect(() =>
        resolveBrokerConfig({ kind: 'nats', url: NATS_URL, subject_prefix: bad }, { dataDir: '.' }),
      ).toThrow(/broker\.yaml: subject_prefix/);
    expect(() => resolveBrokerConfig({ kind: 'local', subject_prefix: 'prod' }, { dataDir: '.' })).toThrow(
      /broker\.yaml: subject_prefix applies to kind nats only/,
    );
    expect(
      resolveBrokerConfig(
        { kind: 'nats', url: NATS_URL, subject_prefix: 'team-a.staging' },
        { dataDir: '.' },
      ),
    ).toMatchObject({
      subjectPrefix: 'team-a.staging',
    });
  });
});
