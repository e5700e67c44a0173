// The history checker on hand-made histories: a clean run passes, and each broken one fails exactly the
// invariant it breaks.
import { describe, expect, it } from 'vitest';
import { checkHistory, formatReport, type CheckParams } from './checker.js';
import type { History, LeaseGrant, ReloadProbe } from './history.js';

const T = 1_700_000_000_000;
const P: CheckParams = { intervalMs: 2000, jitterMs: 0, ttlMs: 3000, heartbeatWindowMs: 15_000 };
const HOLDERS = ['a#1', 'b#1', 'c#1'];
const JOBS = ['j0', 'j1'];

/**
 * Two jobs ticking every 2 s from T to T+20 s on three daemons in turn; one item per job published every
 * 2 s from T+1 s to T+17 s, each delivered once 1.3 s later inside the next tick's lease, and audited.
 */
function clean(): History {
  const grants: LeaseGrant[] = [];
  let epoch = 0;
  for (let m = 0; m <= 10; m++) {
    for (const [j, jobId] of JOBS.entries()) {
      const grantedAt = T + 2000 * m;
      grants.push({
        jobId,
        holder: HOLDERS[(m + j) % 3]!,
        epoch: ++epoch,
        grantedAt,
        dueAt: grantedAt - 100,
        releasedAt: grantedAt + 800,
        slotAt: grantedAt - 100,
        ran: { status: 'ok', nextRunAt: grantedAt + 1900 },
      });
    }
  }
  const h: History = {
    published: [],
    sink: [],
    otherMessages: 0,
    audit: [],
    grants,
    faults: [],
    logs: [],
    reloads: [],
    skews: [],
    quietFrom: T + 18_000,
    endedAt: T + 21_000,
  };
  for (let k = 0; k <= 8; k++) {
    for (const jobId of JOBS) {
      const itemId = `${jobId}/${String(k + 1).padStart(6, '0')}`;
      const publishedAt = T + 1000 + 2000 * k;
      const at = publishedAt + 1300;
      const g = grants.find((x) => x.jobId === jobId && x.grantedAt <= at && at <= x.releasedAt!)!;
      h.published.push({ jobId, itemId, n: k + 1, publishedAt });
      h.sink.push({ itemId, at });
      h.audit.push({
        seq: h.audit.length + 1,
        jobId,
        itemId,
        leaseEpoch: g.epoch,
        holder: g.holder,
        deliveredAt: at,
      });
    }
  }
  return h;
}

/** Moves the quiet period before the last round and drops `itemId` from the sink. */
function dropReceipt(h: History, itemId: string): void {
  h.quietFrom = T + 16_500;
  h.sink.splice(
    h.sink.findIndex((x) => x.itemId === itemId),
    1,
  );
}

/** Removes grants, and the audited deliveries made under them. */
function dropGrants(h: History, drop: (g: LeaseGrant) => boolean): void {
  const gone = new Set(h.grants.filter(drop).map((g) => g.epoch));
  h.grants = h.grants.filter((g) => !gone.has(g.epoch));
  h.audit = h.audit.filter((a) => !gone.has(a.leaseEpoch));
}

const grantAt = (h: History, jobId: string, t: number): LeaseGrant =>
  h.grants.find((g) => g.jobId === jobId && g.grantedAt === T + t)!;

/** The tick of this grant never ended: its holder died or was cut off. */
function cutOff(g: LeaseGrant): void {
  delete g.releasedAt;
  delete g.ran;
}

/** Daemon a is killed at T+6.1 s while it holds j0's tick of T+6 s; b takes j0 over at T+8 s. */
function killOfHolder(h: History): void {
  cutOff(grantAt(h, 'j0', 6000));
  h.faults.push({ kind: 'kill', daemonId: 'a', startedAt: T + 6100, healedAt: T + 8000 });
}

const cases: [string, (h: History) => void, string[]][] = [
  ['a clean run', () => {}, []],
  [
    'an item published after the quiet period began may be missing',
    (h) => (
      dropReceipt(h, 'j0/000009'),
      void h.audit.splice(
        h.audit.findIndex((a) => a.itemId === 'j0/000009'),
        1,
      )
    ),
    [],
  ],
  ['a lost item', (h) => dropReceipt(h, 'j0/000001'), ['J1']],
  [
    'an item received that was never published',
    (h) => void h.sink.push({ itemId: 'j0/999999', at: T + 5000 }),
    ['J1'],
  ],
  ['an item audited as delivered that the sink never got', (h) => dropReceipt(h, 'j1/000009'), ['J1']],
  ['a duplicate without a fault', (h) => void h.sink.push({ itemId: 'j0/000003', at: T + 8300 }), ['J2']],
  [
    'a duplicate of the item in flight at a kill of its holder',
    (h) => (killOfHolder(h), void h.sink.push({ itemId: 'j0/000003', at: T + 8300 })),
    [],
  ],
  [
    'two duplicates of one job charged to one kill',
    (h) => (
      killOfHolder(h),
      void h.sink.push({ itemId: 'j0/000003', at: T + 8300 }, { itemId: 'j0/000002', at: T + 8400 })
    ),
    ['J2'],
  ],
  [
    'a duplicate of an item published after the fault healed',
    (h) => (killOfHolder(h), void h.sink.push({ itemId: 'j0/000005', at: T + 10_300 })),
    ['J2'],
  ],
  [
    'a duplicate later than failover + interval + slack after the heal',
    (h) => (killOfHolder(h), void h.sink.push({ itemId: 'j0/000003', at: T + 16_001 })),
    ['J2'],
  ],
  [
    'a duplicate of a job the victim did not hold',
    (h) => (killOfHolder(h), void h.sink.push({ itemId: 'j1/000003', at: T + 8300 })),
    ['J2'],
  ],
  [
    'an audited write with an older epoch than the one before it',
    (h) => void (h.audit[3]!.leaseEpoch = 1),
    ['J3'],
  ],
  [
    'an audited write under an epoch granted to another daemon',
    (h) => void (h.audit[0]!.holder = 'c#9'),
    ['J3'],
  ],
  [
    'an audited write after its lease was released',
    (h) => void (h.audit[0]!.deliveredAt = grantAt(h, 'j0', 2000).releasedAt! + 1),
    ['J3'],
  ],
  [
    'a pause of a holder whose tick never logged losing its lease',
    (h) => (
      cutOff(grantAt(h, 'j0', 6000)),
      h.faults.push({ kind: 'pause', daemonId: 'a', startedAt: T + 6100, healedAt: T + 12_100 }),
      void h.logs.push({ daemonId: 'a', at: T + 12_200, msg: 'poller items delivered' })
    ),
    ['J3'],
  ],
  [
    'a pause of a holder whose tick logged losing its lease',
    (h) => (
      cutOff(grantAt(h, 'j0', 6000)),
      h.faults.push({ kind: 'pause', daemonId: 'a', startedAt: T + 6100, healedAt: T + 12_100 }),
      void h.logs.push({
        daemonId: 'a',
        at: T + 12_200,
        msg: 'poller tick lost its lease; its writes are discarded',
      })
    ),
    [],
  ],
  [
    // Its tick at the first pause was broken then; at the second it holds nothing, so it has nothing to lose.
    'a second pause of a daemon whose grant was broken at the first',
    (h) => {
      const g = grantAt(h, 'j0', 6000);
      cutOff(g);
      Object.assign(g, { endedAt: T + 9200, endedHow: 'broken' });
      h.faults.push(
        { kind: 'pause', daemonId: 'a', startedAt: T + 6100, healedAt: T + 12_100 },
        { kind: 'pause', daemonId: 'a', startedAt: T + 15_000, healedAt: T + 15_500 },
      );
      h.logs.push({
        daemonId: 'a',
        at: T + 12_200,
        msg: 'poller tick lost its lease; its writes are discarded',
      });
    },
    [],
  ],
  [
    'a kill whose held job is taken over late',
    (h) => (
      killOfHolder(h),
      void Object.assign(grantAt(h, 'j0', 8000), {
        grantedAt: T + 12_200,
        slotAt: T + 12_100,
        ran: { status: 'ok', nextRunAt: T + 14_100 },
      })
    ),
    ['J4'],
  ],
  [
    'a kill whose held job is never taken over',
    (h) => (killOfHolder(h), dropGrants(h, (g) => g.jobId === 'j0' && g.grantedAt > T + 6000)),
    ['J4', 'J5'],
  ],
  ['ticks late outside faults', (h) => void h.grants.forEach((g) => (g.dueAt = g.grantedAt - 2500)), ['J4']],
  [
    // The takeover's claim sees the slot the dead holder was running, due before the fault; the job became
    // claimable only when the lease was broken. That wait is the takeover's (J4 above), not lateness.
    'a takeover of a slot due before the fault, claimed right after the break',
    (h) => {
      killOfHolder(h);
      Object.assign(grantAt(h, 'j0', 6000), { endedAt: T + 7950, endedHow: 'broken' });
      grantAt(h, 'j0', 8000).dueAt = T + 5900;
    },
    [],
  ],
  [
    'a gap between two tick starts beyond the bound',
    (h) => dropGrants(h, (g) => g.jobId === 'j1' && g.grantedAt > T + 4000 && g.grantedAt < T + 14_000),
    ['J5'],
  ],
  [
    'the same gap inside a db-restart window',
    (h) => (
      dropGrants(h, (g) => g.jobId === 'j1' && g.grantedAt > T + 4000 && g.grantedAt < T + 14_000),
      void h.faults.push({ kind: 'db-restart', startedAt: T + 7000, healedAt: T + 7500 })
    ),
    [],
  ],
  ['a job that stops ticking before the end', (h) => void (h.endedAt = T + 29_000), ['J5']],
  [
    'a job that stops ticking at a db-restart and never again',
    (h) => (
      (h.endedAt = T + 29_000),
      dropGrants(h, (g) => g.jobId === 'j1' && g.grantedAt > T + 4000),
      void h.faults.push({ kind: 'db-restart', startedAt: T + 7000, healedAt: T + 7500 })
    ),
    ['J5'],
  ],
  [
    'a tick granted before its due time',
    (h) => void (h.grants[5]!.dueAt = h.grants[5]!.grantedAt + 1),
    ['J8'],
  ],
  [
    // The daemon stamps `delivered_at` with its database-corrected clock, a few ms off at best.
    'an audited write stamped after the release by a daemon clock ahead, written before it by the database',
    (h) => {
      const g = grantAt(h, 'j0', 2000);
      h.audit[0]!.deliveredAt = g.releasedAt! + 40;
      h.audit[0]!.writtenAt = g.releasedAt!;
    },
    [],
  ],
  [
    'an audited write the database wrote after the release',
    (h) => void (h.audit[0]!.writtenAt = grantAt(h, 'j0', 2000).releasedAt! + 1),
    ['J3'],
  ],
  [
    'an audited write accepted while its epoch did not hold the lease',
    (h) => void (h.audit[2]!.leaseHeld = false),
    ['J3'],
  ],
  [
    'an audited write after its epoch was broken (its holder declared dead)',
    (h) => {
      const g = grantAt(h, 'j0', 2000);
      cutOff(g);
      Object.assign(g, { endedAt: g.grantedAt + 300, endedHow: 'broken' });
      h.audit[0]!.deliveredAt = g.grantedAt + 301;
    },
    ['J3'],
  ],
  [
    // A host clock 90 s behind, used uncorrected: the next run lands in the past and the slot runs again.
    'a tick that planned its next run before its own start, and the slot that ran twice',
    (h) => {
      const g = grantAt(h, 'j1', 8000);
      g.ran!.nextRunAt = g.grantedAt - 88_000;
      grantAt(h, 'j1', 10_000).slotAt = g.slotAt!;
    },
    ['J8'],
  ],
  [
    'a slot run again after a tick that did not succeed',
    (h) => {
      grantAt(h, 'j1', 8000).ran!.status = 'transient';
      grantAt(h, 'j1', 10_000).slotAt = grantAt(h, 'j1', 8000).slotAt!;
    },
    [],
  ],
  [
    'a slot run again after a tick cut off by a kill (a takeover)',
    (h) => (killOfHolder(h), void (grantAt(h, 'j0', 8000).slotAt = grantAt(h, 'j0', 6000).slotAt!)),
    [],
  ],
  [
    'a skewed daemon that measured its skew',
    (h) => void h.skews.push({ daemonId: 'b', skewSecs: 90, measuredSecs: -89.6 }),
    [],
  ],
  [
    'a skewed daemon that measured no skew, and one that measured the wrong one',
    (h) =>
      void h.skews.push(
        { daemonId: 'b', skewSecs: -90 },
        { daemonId: 'c', skewSecs: -90, measuredSecs: -90 },
      ),
    ['J8'],
  ],
  [
    'a reload during a NATS partition that names the cut-off daemon, which converges after the heal',
    (h) => void h.reloads.push(reload({ convergedAt: T + 15_000 })),
    [],
  ],
  [
    'a reload during a NATS partition that exits 0',
    (h) => void h.reloads.push(reload({ exitCode: 0 })),
    ['J7'],
  ],
  [
    'a reload that does not name the cut-off daemon',
    (h) => void h.reloads.push(reload({ output: 'daemons 2/3 answered:\n  ✗ b: no ack within 5 s\n' })),
    ['J7'],
  ],
  [
    'a cut-off daemon that converges more than 10 s after the heal, or never',
    (h) => void h.reloads.push(reload({ convergedAt: T + 20_001 }), reload({ convergedAt: undefined })),
    ['J7'],
  ],
  [
    'a lease held at the end by no live daemon',
    (h) => void (h.endState = { orphanLeases: [{ jobId: 'j0', holder: 'a#0' }], idleInTransaction: [] }),
    ['J9'],
  ],
  [
    'a session idle in a transaction at the end',
    (h) =>
      void (h.endState = {
        orphanLeases: [],
        idleInTransaction: ['daemon b idle in transaction for 20000 ms'],
      }),
    ['J9'],
  ],
];

/** `agent reload` during a NATS partition of daemon c, healed at T+10 s, converged 1 s later. */
function reload(o: Partial<ReloadProbe>): ReloadProbe {
  return {
    daemonId: 'c',
    at: T + 6000,
    exitCode: 3,
    output:
      'daemons 2/3 answered:\n  ✓ a (h): config v2 hash 9f3c1a2b\n  ✓ b (h): config v2 hash 9f3c1a2b\n  ✗ c: no ack within 5 s (last heartbeat 0 s ago)\n',
    pushedVersion: 2,
    healedAt: T + 10_000,
    convergedAt: T + 11_000,
    ...o,
  };
}

describe('history checker', () => {
  it.each(cases)('%s', (_name, mutate, failing) => {
    const h = clean();
    mutate(h);
    const r = checkHistory(h, P);
    expect([...new Set(r.violations.map((v) => v.invariant))].sort()).toEqual(failing);
    expect(r.ok).toBe(failing.length === 0);
  });

  it('counts what it saw and reports every violation on its own line', () => {
    const h = clean();
    killOfHolder(h);
    h.sink.push({ itemId: 'j0/000003', at: T + 8300 }, { itemId: 'j1/000004', at: T + 9000 });
    const r = checkHistory(h, P);
    expect(r.stats).toEqual({
      published: 18,
      received: 18,
      duplicates: 2,
      attributedDuplicates: 1,
      audited: 18,
      grants: 22,
      faults: 1,
      takeovers: 1,
      maxTakeoverMs: 1900,
      latenessP99Ms: 100,
    });
    expect(formatReport(r).split('\n')).toEqual([
      'history: 18 published, 18 received, 2 duplicates (1 attributed), 18 audited deliveries, 22 lease grants, 1 faults',
      'takeovers: 1 (max 1900 ms); tick lateness p99 outside faults: 100 ms',
      'verdict: FAIL (1 violations)',
      `  J2 1 duplicates not attributable to a fault: j1/000004 at ${new Date(T + 9000).toISOString()}`,
    ]);
  });
});
