// One history of a fault run, merged from what the source published, what the sink received, what the daemons
// logged, what PostgreSQL audited and which faults the nemesis applied. The checker (checker.ts) reads only
// this shape, so it does not depend on the store's final schema: the run maps its rows into these types.
//
// Times are epoch ms. Source, sink, faults and log receipt are on the harness's clock; lease times and audit
// write times are on the database's clock (`now()`): the database runs on the same host as the harness, so
// the two agree within scheduling noise. An audit row's `deliveredAt` is the daemon's database-corrected
// clock, good to a fraction of a round trip; a daemon's own log `ts` is never used (a skewed daemon's clock is
// wrong on purpose).
import type { ChatHistory } from './chat-history.js';
import type { AppliedFault } from './nemesis-run.js';
import type { PublishedItem, SinkDelivery } from './workload.js';

/** A row of the delivery audit (`poll_delivery`). */
export interface DeliveryAudit {
  seq: number;
  jobId: string;
  itemId: string;
  leaseEpoch: number;
  /** `<daemon_id>#<incarnation>`, or a bare `daemon_id` when that is all the audit keeps. */
  holder: string;
  /** When the daemon sent the item, on its database-corrected clock (good to a fraction of a round trip). */
  deliveredAt: number;
  /** When the transaction that wrote the row began, on the database clock (the harness's trigger). */
  writtenAt?: number;
  /** Whether the job's lease was (holder, epoch) of the row when the row was written (the trigger). */
  leaseHeld?: boolean;
}

/** One lease grant, i.e. one tick start: from the claim audit or the claim loop's log. */
export interface LeaseGrant {
  jobId: string;
  holder: string;
  epoch: number;
  /** When the claim committed (database clock). */
  grantedAt: number;
  /** The job's `due_at` the claim saw (database clock). */
  dueAt: number;
  /** When the holder released it (database clock); absent when it never did (killed, fenced off). */
  releasedAt?: number;
  /** When the epoch stopped being valid, however it ended (database clock); absent while it holds. */
  endedAt?: number;
  /** Released by its holder, broken (holder known dead), revoked (replace, reset), reclaimed after expiry. */
  endedHow?: 'released' | 'broken' | 'revoked' | 'reclaimed';
  /** The nominal slot the job was on when this grant was made (database clock). */
  slotAt?: number;
  /** Set when a tick ran under this grant to its end: its outcome and the next run it planned. */
  ran?: { status: string; nextRunAt?: number };
}

/** `agent reload` issued while one daemon was cut off from NATS, and that daemon's convergence after. */
export interface ReloadProbe {
  /** The partitioned daemon. */
  daemonId: string;
  /** Harness clock. */
  at: number;
  exitCode: number | null;
  output: string;
  /** The bundle version pushed inside the partition. */
  pushedVersion: number;
  /** When the partition healed (harness clock). */
  healedAt?: number;
  /** When the daemon's membership row first showed `pushedVersion` (harness clock). */
  convergedAt?: number;
}

/** A daemon restarted under a skewed clock, and the clock skew it measured against the database. */
export interface SkewProbe {
  daemonId: string;
  skewSecs: number;
  /** `poller_clock_skew_seconds` of that daemon while skewed (database minus host). */
  measuredSecs?: number;
}

/** What the database shows once the run is quiet. */
export interface EndState {
  /** Held leases whose holder is not the current incarnation of a live member. */
  orphanLeases: { jobId: string; holder: string }[];
  /** Sessions idle in a transaction for more than a second: who, how long, and their last statement. */
  idleInTransaction: string[];
}

export interface DaemonLogRecord {
  daemonId: string;
  /** When the harness read the line (harness clock). */
  at: number;
  msg: string;
  level?: string;
  jobId?: string;
  /** A channel's records name its plugin and instance. */
  plugin?: string;
  instance?: string;
}

/** An item message the sink accepted. */
interface SinkRecord {
  itemId: string;
  at: number;
}

export interface History {
  published: PublishedItem[];
  sink: SinkRecord[];
  /** Sink messages that are not item ids (alerts, replies), counted only. */
  otherMessages: number;
  /** Sorted by seq. */
  audit: DeliveryAudit[];
  /** Sorted by grantedAt. */
  grants: LeaseGrant[];
  faults: AppliedFault[];
  logs: DaemonLogRecord[];
  reloads: ReloadProbe[];
  skews: SkewProbe[];
  endState?: EndState;
  /** The chat workload's part, when it ran. */
  chat?: ChatHistory;
  /** The nemesis stopped and everything healed: every item published before must reach the sink. */
  quietFrom: number;
  /** The end of observation. */
  endedAt: number;
}

/** When a grant's epoch stopped being valid: however it ended, else its release; undefined while it holds. */
export const grantEnd = (g: LeaseGrant): number | undefined => g.endedAt ?? g.releasedAt;

/** `daemon-a#1234.af3e` → `daemon-a`; a bare id stays as it is. */
export function daemonOf(holder: string): string {
  const i = holder.indexOf('#');
  return i < 0 ? holder : holder.slice(0, i);
}

/** A line the harness read from a daemon's stdout or stderr, with when it read it. */
export interface RawLogLine {
  at: number;
  line: string;
}

/** Records of `--log-format json` lines; anything else (a stack trace, a kv line) is counted, not parsed. */
export function parseDaemonLog(
  daemonId: string,
  lines: readonly RawLogLine[],
): { records: DaemonLogRecord[]; unparsed: number } {
  const records: DaemonLogRecord[] = [];
  let unparsed = 0;
  for (const { at, line } of lines) {
    let body: unknown;
    try {
      body = JSON.parse(line);
    } catch {
      unparsed++;
      continue;
    }
    if (typeof body !== 'object' || body === null || typeof (body as { msg?: unknown }).msg !== 'string') {
      unparsed++;
      continue;
    }
    const b = body as {
      msg: string;
      level?: unknown;
      job_id?: unknown;
      plugin?: unknown;
      instance?: unknown;
    };
    const rec: DaemonLogRecord = { daemonId, at, msg: b.msg };
    if (typeof b.level === 'string') rec.level = b.level;
    if (typeof b.job_id === 'string') rec.jobId = b.job_id;
    if (typeof b.plugin === 'string') rec.plugin = b.plugin;
    if (typeof b.instance === 'string') rec.instance = b.instance;
    records.push(rec);
  }
  return { records, unparsed };
}

const num = (v: unknown, what: string): number => {
  const n =
    v instanceof Date ? v.getTime() : typeof v === 'string' && !/^\d+$/.test(v) ? Date.parse(v) : Number(v);
  if (!Number.isFinite(n)) throw new Error(`audit row: ${what} is not a number or time: ${String(v)}`);
  return n;
};

/**
 * `poll_delivery` rows as `pg` returns them (`seq, job_id, item_id, lease_epoch, delivered_at` and
 * `holder` or `daemon_id`, optionally the trigger's `written_at` and `lease_held`; bigint as string or
 * number, timestamps as Date) mapped to `DeliveryAudit`.
 */
export function auditFromRows(rows: readonly Record<string, unknown>[]): DeliveryAudit[] {
  return rows
    .map((r) => {
      const a: DeliveryAudit = {
        seq: num(r['seq'], 'seq'),
        jobId: String(r['job_id']),
        itemId: String(r['item_id']),
        leaseEpoch: num(r['lease_epoch'], 'lease_epoch'),
        holder: String(r['holder'] ?? r['daemon_id']),
        deliveredAt: num(r['delivered_at'], 'delivered_at'),
      };
      if (r['written_at'] !== undefined && r['written_at'] !== null)
        a.writtenAt = num(r['written_at'], 'written_at');
      if (typeof r['lease_held'] === 'boolean') a.leaseHeld = r['lease_held'];
      return a;
    })
    .sort((a, b) => a.seq - b.seq);
}

export interface HistoryInput {
  published: readonly PublishedItem[];
  sink: readonly Pick<SinkDelivery, 'text' | 'at'>[];
  audit?: readonly DeliveryAudit[];
  grants?: readonly LeaseGrant[];
  faults?: readonly AppliedFault[];
  logs?: readonly DaemonLogRecord[];
  reloads?: readonly ReloadProbe[];
  skews?: readonly SkewProbe[];
  endState?: EndState;
  chat?: ChatHistory;
  quietFrom: number;
  endedAt: number;
}

/** An item message is the item id alone: `feed-0007/000012`. */
const isItem = (text: string): boolean => /^\S+\/\d{6,}$/.test(text);

/** Merges the logs of a run into one history; sink texts that are no item id are counted apart. */
export function buildHistory(input: HistoryInput): History {
  const sink = input.sink.filter((s) => isItem(s.text)).map((s) => ({ itemId: s.text, at: s.at }));
  return {
    published: [...input.published],
    sink: sink.sort((a, b) => a.at - b.at),
    otherMessages: input.sink.length - sink.length,
    audit: [...(input.audit ?? [])].sort((a, b) => a.seq - b.seq),
    grants: [...(input.grants ?? [])].sort((a, b) => a.grantedAt - b.grantedAt),
    faults: [...(input.faults ?? [])].sort((a, b) => a.startedAt - b.startedAt),
    logs: [...(input.logs ?? [])].sort((a, b) => a.at - b.at),
    reloads: [...(input.reloads ?? [])],
    skews: [...(input.skews ?? [])],
    ...(input.endState ? { endState: input.endState } : {}),
    ...(input.chat ? { chat: input.chat } : {}),
    quietFrom: input.quietFrom,
    endedAt: input.endedAt,
  };
}
