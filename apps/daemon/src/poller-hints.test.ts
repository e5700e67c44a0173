import { createNatsBroker, type Broker } from '@agent/broker';
import { createMemoryLogger } from '@agent/log';
import { sleep } from '@agent/timers';
import { afterEach, describe, expect, it } from 'vitest';
import { createPollerHints, hintPayload, readHint } from './poller-hints.js';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

describe('due hints: the payload', () => {
  it('names the sender, the earliest due time and at most 16 jobs', () => {
    expect(hintPayload('a#1', { jobIds: ['j'], dueAt: 5 })).toEqual({
      v: 1,
      from: 'a#1',
      due_at: 5,
      jobs: ['j'],
    });
    const many = Array.from({ length: 20 }, (_, i) => `j${i}`);
    const p = hintPayload('a#1', { jobIds: many, dueAt: null });
    expect(p.jobs).toEqual(many.slice(0, 16));
    expect(p.more).toBe(4);
    expect(p.due_at).toBeNull();
  });

  it.each([
    { data: { v: 1, from: 'b#1', due_at: 1234, jobs: ['j'] }, read: { dueAt: 1234 } },
    { data: { v: 1, from: 'b#1', due_at: null, jobs: [] }, read: { dueAt: undefined } },
    // A newer version this daemon cannot read still means: look now.
    { data: { v: 2, from: 'b#1', due: '2026-01-01' }, read: { dueAt: undefined } },
    { data: { v: 1, from: 'b#1', due_at: 'soon' }, read: { dueAt: undefined } },
    { data: { v: 1, from: 'b#1', due_at: Number.NaN }, read: { dueAt: undefined } },
    // Its own hint: its claim loop was woken when it made the jobs due.
    { data: { v: 1, from: 'a#1', due_at: 1234 }, read: null },
    { data: null, read: null },
    { data: 'wake', read: null },
    { data: [1], read: null },
  ])('reads $data as $read', ({ data, read }) => {
    expect(readHint(data, 'a#1')).toEqual(read);
  });
});

describe('due hints over NATS', () => {
  const brokers: Broker[] = [];
  afterEach(async () => {
    for (const b of brokers.splice(0)) await b.close().catch(() => {});
  });
  const connect = async () => {
    const b = await createNatsBroker({ url: NATS_URL, name: 'hints-test' });
    brokers.push(b);
    return b;
  };

  it("wake another daemon's runner by the due time, not its own; a closed broker loses the hint quietly", async () => {
    const [ba, bb] = [await connect(), await connect()];
    const logger = createMemoryLogger();
    const a = createPollerHints({ broker: ba, holderId: 'a#1', logger });
    const b = createPollerHints({ broker: bb, holderId: 'b#1', logger });
    const wokenA: (number | undefined)[] = [];
    const wokenB: (number | undefined)[] = [];
    const offA = a.follow({ wake: (at) => wokenA.push(at) });
    b.follow({ wake: (at) => wokenB.push(at) });
    await ba.flush();
    await bb.flush();
    // Unusual due times: other daemons on this NATS server may send hints of their own meanwhile.
    const due = 1_000_000_000_000 + Math.floor(Math.random() * 1e9);
    a.announce({ jobIds: ['j'], dueAt: due });
    a.announce({ jobIds: [], dueAt: due + 1 });
    b.announce({ jobIds: ['k'], dueAt: due + 2 });
    for (let i = 0; i < 100 && !(wokenB.includes(due) && wokenA.includes(due + 2)); i++) await sleep(20);
    expect(wokenB).toContain(due);
    expect(wokenA).toContain(due + 2);
    // Its own hint and an empty one are not sent or not followed.
    expect(wokenA).not.toContain(due);
    expect([...wokenA, ...wokenB]).not.toContain(due + 1);
    expect(wokenB).not.toContain(due + 2);

    offA();
    await ba.close();
    expect(() => a.announce({ jobIds: ['j'], dueAt: due + 3 })).not.toThrow();
    await sleep(50);
    expect(logger.find('poller due hint not sent')).toHaveLength(1);
    expect(wokenB).not.toContain(due + 3);
  });
});
