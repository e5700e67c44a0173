// The nemesis's schedule: a pure function of a seed. The same seed gives the same faults at the same offsets,
// so a failing run is replayed with `--seed`. Effects are in nemesis-run.ts.

export const FAULT_KINDS = ['kill', 'pause', 'partition-db', 'partition-nats', 'skew', 'db-restart'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultEvent {
  /** Offset from the start of the run, ms. */
  at: number;
  kind: FaultKind;
  /** Index of the daemon it hits; absent for `db-restart` (it hits everyone). */
  target?: number;
  /** How long the fault lasts before it heals, ms (0 for `db-restart`: the restart is the fault). */
  durationMs: number;
  /** `skew` only: the clock offset the daemon runs under, seconds (±). */
  skewSecs?: number;
}

export interface ScheduleOptions {
  seed: number;
  /** Faults start and heal within this much time from the start of the run. */
  runMs: number;
  daemons: number;
  /** The lease TTL the daemons run with; pause and partition-db last 2 x TTL. */
  ttlMs: number;
  /** Default: every kind. */
  kinds?: readonly FaultKind[];
  /** Time between two fault starts, drawn uniformly; default 8-15 s. */
  gapMs?: readonly [number, number];
  /** SIGKILL to restart, drawn uniformly; default 1-5 s. */
  killDownMs?: readonly [number, number];
  /** Default 10 s. */
  natsPartitionMs?: number;
  /** How long a skewed daemon keeps its skewed clock before it is restarted with the true one; default 20 s. */
  skewHoldMs?: number;
  /** Default 90. */
  skewSecs?: number;
  /** Quiet time after a heal before the next fault starts, so faults never overlap; default 1 s. */
  settleMs?: number;
}

/** mulberry32: a small, well-mixed 32-bit generator; enough for a test schedule. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seed for a run that was not given one (printed, so the run can be replayed). */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}

function between(random: () => number, [lo, hi]: readonly [number, number]): number {
  return Math.round(lo + random() * (hi - lo));
}

function bad(what: string): never {
  throw new Error(`nemesis schedule: ${what}`);
}

function validate(o: ScheduleOptions): void {
  if (!Number.isInteger(o.seed)) bad(`seed must be an integer, got ${o.seed}`);
  if (!(o.daemons >= 1)) bad(`needs at least one daemon, got ${o.daemons}`);
  if (!(o.ttlMs > 0) || !(o.runMs >= 0)) bad('ttlMs must be > 0 and runMs >= 0');
  if (o.kinds?.length === 0) bad('kinds is empty');
  const [lo, hi] = o.gapMs ?? [8000, 15_000];
  if (!(lo > 0 && lo <= hi)) bad(`gapMs must be [lo, hi] with 0 < lo <= hi, got [${lo}, ${hi}]`);
}

/** One fault starting at `at`; draws from `random` in a fixed order (kind, target, duration). */
function drawFault(o: ScheduleOptions, random: () => number, at: number): FaultEvent {
  const kinds = o.kinds ?? FAULT_KINDS;
  const kind = kinds[Math.floor(random() * kinds.length)]!;
  const target = Math.floor(random() * o.daemons);
  switch (kind) {
    case 'kill':
      return { at, kind, target, durationMs: between(random, o.killDownMs ?? [1000, 5000]) };
    case 'pause':
    case 'partition-db':
      return { at, kind, target, durationMs: 2 * o.ttlMs };
    case 'partition-nats':
      return { at, kind, target, durationMs: o.natsPartitionMs ?? 10_000 };
    case 'skew': {
      const secs = o.skewSecs ?? 90;
      return {
        at,
        kind,
        target,
        durationMs: o.skewHoldMs ?? 20_000,
        skewSecs: random() < 0.5 ? -secs : secs,
      };
    }
    case 'db-restart':
      return { at, kind, durationMs: 0 };
  }
}

/**
 * Faults in start order. The first starts one gap after the run starts; each next one a gap after the
 * previous start, but never before the previous heal plus `settleMs`. A fault that would not heal within
 * `runMs` is not scheduled (the run ends healed).
 */
export function nemesisSchedule(o: ScheduleOptions): FaultEvent[] {
  validate(o);
  const random = seededRandom(o.seed);
  const gap = o.gapMs ?? [8000, 15_000];
  const events: FaultEvent[] = [];
  let at = between(random, gap);
  for (;;) {
    const fault = drawFault(o, random, at);
    if (fault.at + fault.durationMs > o.runMs) return events;
    events.push(fault);
    at = Math.max(at + between(random, gap), fault.at + fault.durationMs + (o.settleMs ?? 1000));
  }
}

/** One line per fault, for the log of a run (with the seed, so it can be replayed). */
export function describeSchedule(seed: number, events: readonly FaultEvent[]): string {
  const lines = events.map((e) => {
    const who = e.target === undefined ? 'all' : `daemon ${e.target}`;
    const skew = e.skewSecs === undefined ? '' : ` skew ${e.skewSecs > 0 ? '+' : ''}${e.skewSecs}s`;
    return `  t+${(e.at / 1000).toFixed(1)}s ${e.kind} ${who} for ${(e.durationMs / 1000).toFixed(1)}s${skew}`;
  });
  return [`nemesis seed=${seed}: ${events.length} faults`, ...lines].join('\n');
}
