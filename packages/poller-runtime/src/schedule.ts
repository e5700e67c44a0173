/**
 * Schedules as pure functions of time (ms since the epoch): `every_secs`, 6-field `cron` in an IANA
 * `tz`, and one-shot `at`. cron-parser parses the expression and picks matching calendar days (in UTC,
 * where it has no DST to get wrong); the wall-clock to instant step, and so the DST policy, is ours:
 *
 * - A wall time skipped by a spring-forward gap fires once, shifted forward by the length of the gap
 *   (02:30 in New York on a spring-forward day fires at 03:30 EDT; 02:15 on Lord Howe fires at 02:45).
 * - A wall time repeated by a fall-back overlap fires once, at its first occurrence, unless the hour
 *   field is `*`: then the job fires in both repeated hours (real elapsed time keeps its spacing).
 */
import { createHash } from 'node:crypto';
import { parseCron } from './cron.js';

export { isValidTimeZone, zoneOffsetMs } from './time-zone.js';

export type ScheduleSpec =
  { every_secs: number } | { cron: string; tz?: string; stagger_jitter_ms?: number } | { at: string };

export interface Schedule {
  readonly type: 'every' | 'cron' | 'at';
  /** Canonical text of the schedule; a persisted `next_run_at` is reused only while this is unchanged. */
  readonly key: string;
  /** The job's own jitter bound (`stagger_jitter_ms`), if it has one. */
  readonly ownJitterMs: number | undefined;
  /** `at` instant in ms. */
  readonly atMs: number | undefined;
  /** First slot for a job that has never run: `every_secs` now, `cron` the next fire time, `at` its instant. */
  firstSlot(now: number): number | null;
  /** The next nominal slot strictly after `now`, on the grid of `prevSlot` (missed slots are skipped). */
  slotAfter(prevSlot: number, now: number): number | null;
  /** Interval for lease TTL and backoff caps: `every_secs`; cron: gap between its next two fire times; `at`: 30 s. */
  intervalMs(now: number): number;
}

export type ParseResult =
  | { ok: true; schedule: Schedule }
  /** `field`: the schedule key at fault; `hint`: what to write instead. */
  | { ok: false; errors: string[]; field?: 'every_secs' | 'cron' | 'tz' | 'at'; hint?: string };

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export interface ScheduleOptions {
  /**
   * What an `every_secs` grid's phase is derived from (the job id): jobs of one interval then tick spread
   * over it instead of together, and each keeps its phase across restarts. Default `''` (phase 0).
   */
  phaseKey?: string;
}

export function parseSchedule(spec: ScheduleSpec, options: ScheduleOptions = {}): ParseResult {
  if ('every_secs' in spec) {
    const s = spec.every_secs;
    if (!Number.isSafeInteger(s) || s < 1)
      return {
        ok: false,
        errors: ['every_secs must be a whole number of seconds >= 1'],
        field: 'every_secs',
      };
    return { ok: true, schedule: everySchedule(s, options.phaseKey ?? '') };
  }
  if ('cron' in spec) return parseCron(spec.cron, spec.tz ?? 'UTC', spec.stagger_jitter_ms);
  if ('at' in spec) {
    const ms = parseRfc3339(spec.at);
    if (ms === null)
      return {
        ok: false,
        errors: [`at "${spec.at}" is not an RFC 3339 instant`],
        field: 'at',
        hint: 'write a date, a time and an offset, such as 2026-05-01T09:00:00Z or 2026-05-01T09:00:00+02:00',
      };
    return { ok: true, schedule: atSchedule(ms) };
  }
  return { ok: false, errors: ['needs exactly one of every_secs, cron, at'] };
}

export function parseRfc3339(text: string): number | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  if (mo! < 1 || mo! > 12 || d! < 1 || d! > daysInMonth(y!, mo!) || h! > 23 || mi! > 59 || s! > 60)
    return null;
  const ms = Date.parse(text.replace(' ', 'T'));
  return Number.isNaN(ms) ? null : ms;
}

function daysInMonth(y: number, m: number): number {
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/** A stable offset in [0, step) from `key`: 48 bits of its SHA-256, so even a yearly interval is covered. */
export function phaseMs(key: string, step: number): number {
  if (key === '') return 0;
  return createHash('sha256').update(key).digest().readUIntBE(0, 6) % step;
}

/** The key of every `every_secs` schedule of one interval: one string, however many jobs share it. */
const everyKeys = new Map<number, string>();

function everySchedule(secs: number, phaseKey: string): Schedule {
  const step = secs * 1000;
  let key = everyKeys.get(secs);
  if (key === undefined) everyKeys.set(secs, (key = `every_secs:${secs}`));
  return new EverySchedule(step, phaseMs(phaseKey, step), key);
}

/**
 * Slots on the grid `phase + k x step` (epoch ms). The first run is at once (a new job baselines without
 * waiting); the next slots are grid points, never less than half an interval after the previous slot, so a
 * job moving onto its grid (the first run, or a job stored before phases existed) runs once early, not twice.
 * A class: every job has one, and methods on the prototype cost a job no closures.
 */
class EverySchedule implements Schedule {
  readonly type = 'every';
  readonly ownJitterMs = undefined;
  readonly atMs = undefined;

  constructor(
    private readonly step: number,
    private readonly phase: number,
    /** The phase is not part of the key: it never changes for a job, and a stored run time stays valid. */
    readonly key: string,
  ) {}

  firstSlot(now: number): number {
    return now;
  }

  slotAfter(prev: number, now: number): number {
    if (prev > now) return prev;
    const { step, phase } = this;
    const from = Math.max(now, prev + Math.floor(step / 2) - 1);
    return phase + (Math.floor((from - phase) / step) + 1) * step;
  }

  intervalMs(): number {
    return this.step;
  }
}

function atSchedule(ms: number): Schedule {
  return {
    type: 'at',
    key: `at:${ms}`,
    ownJitterMs: undefined,
    atMs: ms,
    firstSlot: () => ms,
    slotAfter: () => null,
    intervalMs: () => 30_000,
  };
}

// ---- jitter ----------------------------------------------------------------------------------------

/** Jitter bound of a job: `at` none, else `stagger_jitter_ms` or the global `default_jitter_ms`. */
export function jitterBound(schedule: Schedule, defaultJitterMs: number): number {
  if (schedule.type === 'at') return 0;
  return Math.max(0, schedule.ownJitterMs ?? defaultJitterMs);
}

/** `slot` plus a fresh uniform jitter in [0, bound). The nominal slot itself never moves. */
export function withJitter(slot: number, bound: number, random: () => number): number {
  if (bound <= 0) return slot;
  return slot + Math.min(bound - 1, Math.floor(random() * bound));
}

/** Lease TTL: max(minimum, factor x interval). */
export function leaseTtlMs(schedule: Schedule, factor: number, now: number, minimumMs = 30_000): number {
  return Math.max(minimumMs, Math.round(factor * schedule.intervalMs(now)));
}

/**
 * How long before its TTL runs out a holder stops trusting its lease: max(1 s, 10 % of the TTL), so a holder
 * whose clock or scheduling lags a little still stops before another can take over. At most half the TTL:
 * only test TTLs are that short, and they must leave a window.
 */
export function leaseTrustMarginMs(ttlMs: number): number {
  return Math.min(Math.max(1000, ttlMs / 10), ttlMs / 2);
}

/** Backoff after the n-th consecutive Transient error: min(interval, 5 s x 2^(n-1)). */
export function transientBackoffMs(n: number, intervalMs: number): number {
  return Math.min(intervalMs, 5000 * 2 ** Math.min(Math.max(n, 1) - 1, 30));
}

/** Breaker open time for the k-th opening in a row (1-based): 60 s doubling, capped at 30 min. */
export function breakerBackoffMs(k: number): number {
  return Math.min(30 * 60_000, 60_000 * 2 ** Math.min(Math.max(k, 1) - 1, 20));
}
