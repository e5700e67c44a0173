// Merging a run's logs into one history.
import { scratchSchema } from '@agent/pg/testing';
import { describe, expect, it } from 'vitest';
import { auditFromRows, buildHistory, daemonOf, parseDaemonLog } from './history.js';

describe('history', () => {
  it.each([
    ['daemon-a#123.ab', 'daemon-a'],
    ['daemon-a', 'daemon-a'],
    ['#x', ''],
  ])('daemonOf(%s) is %s', (holder, id) => {
    expect(daemonOf(holder)).toBe(id);
  });

  it('parses JSON log lines and counts the others', () => {
    const { records, unparsed } = parseDaemonLog('a', [
      {
        at: 1,
        line: '{"ts":"x","level":"warn","msg":"poller tick lost its lease; its writes are discarded","job_id":"feed-0001"}',
      },
      { at: 2, line: 'ts=x level=info msg="daemon started"' },
      { at: 3, line: '[1,2]' },
      { at: 4, line: '{"level":"info"}' },
      { at: 5, line: '{"msg":"daemon started","level":3}' },
      {
        at: 6,
        line: '{"msg":"channel polling started","plugin":"chat_b","instance":"main","offset":"none"}',
      },
    ]);
    expect(records).toEqual([
      {
        daemonId: 'a',
        at: 1,
        msg: 'poller tick lost its lease; its writes are discarded',
        level: 'warn',
        jobId: 'feed-0001',
      },
      { daemonId: 'a', at: 5, msg: 'daemon started' },
      { daemonId: 'a', at: 6, msg: 'channel polling started', plugin: 'chat_b', instance: 'main' },
    ]);
    expect(unparsed).toBe(3);
  });

  it('maps audit rows (bigint as text or number, Date or ISO times, holder or daemon_id) sorted by seq', () => {
    const rows = [
      {
        seq: '7',
        job_id: 'j',
        item_id: 'j/000002',
        lease_epoch: '12',
        daemon_id: 'b',
        delivered_at: new Date(5000),
      },
      {
        seq: 3,
        job_id: 'j',
        item_id: 'j/000001',
        lease_epoch: 11,
        holder: 'a#1',
        delivered_at: '1970-01-01T00:00:04.000Z',
      },
    ];
    expect(auditFromRows(rows)).toEqual([
      { seq: 3, jobId: 'j', itemId: 'j/000001', leaseEpoch: 11, holder: 'a#1', deliveredAt: 4000 },
      { seq: 7, jobId: 'j', itemId: 'j/000002', leaseEpoch: 12, holder: 'b', deliveredAt: 5000 },
    ]);
    expect(auditFromRows([{ ...rows[1], written_at: new Date(3990), lease_held: false }])[0]).toMatchObject({
      deliveredAt: 4000,
      writtenAt: 3990,
      leaseHeld: false,
    });
    expect(() => auditFromRows([{ ...rows[0], lease_epoch: 'x' }])).toThrow(
      /lease_epoch is not a number or time: x/,
    );
  });

  it('maps poll_delivery rows read from PostgreSQL', async () => {
    const s = await scratchSchema('hist');
    try {
      await s.pool.query(`CREATE TABLE ${s.schema}.poll_delivery (
        seq bigserial PRIMARY KEY, job_id text NOT NULL, item_id text NOT NULL, channel text NOT NULL,
        recipient text NOT NULL, delivered_at timestamptz NOT NULL DEFAULT now(),
        lease_epoch bigint NOT NULL, daemon_id text NOT NULL)`);
      await s.pool.query(
        `INSERT INTO ${s.schema}.poll_delivery (job_id, item_id, channel, recipient, lease_epoch, daemon_id)
         VALUES ('j', 'j/000001', 'chat_b', '42', 9007199254740991, 'a'), ('j', 'j/000002', 'chat_b', '42', 5, 'b')`,
      );
      const t0 = Date.now();
      const { rows } = await s.pool.query(`SELECT * FROM ${s.schema}.poll_delivery`);
      const audit = auditFromRows(rows);
      expect(audit.map((a) => [a.seq, a.itemId, a.leaseEpoch, a.holder])).toEqual([
        [1, 'j/000001', 9007199254740991, 'a'],
        [2, 'j/000002', 5, 'b'],
      ]);
      expect(Math.abs(audit[0]!.deliveredAt - t0)).toBeLessThan(5000);
    } finally {
      await s.drop();
    }
  });

  it('keeps item messages of the sink, counts the rest, and sorts every log by time', () => {
    const h = buildHistory({
      published: [],
      sink: [
        { text: 'feed-0001/000002', at: 30 },
        { text: 'hello there', at: 10 },
        { text: 'feed-0001/000001', at: 20 },
      ],
      faults: [
        { kind: 'kill', daemonId: 'b', startedAt: 50, healedAt: 60 },
        { kind: 'pause', daemonId: 'a', startedAt: 5, healedAt: 9 },
      ],
      quietFrom: 100,
      endedAt: 200,
    });
    expect(h.sink).toEqual([
      { itemId: 'feed-0001/000001', at: 20 },
      { itemId: 'feed-0001/000002', at: 30 },
    ]);
    expect(h.otherMessages).toBe(1);
    expect(h.faults.map((f) => f.kind)).toEqual(['pause', 'kill']);
    expect([h.audit, h.grants, h.logs]).toEqual([[], [], []]);
  });
});
