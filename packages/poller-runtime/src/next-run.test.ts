import { describe, expect, it } from 'vitest';
import {
  armTime,
  firstRun,
  isDue,
  nextRealRun,
  runAfterPermanent,
  runAfterSchedulerError,
  runAfterSuccess,
  runAfterTransient,
  runAtResume,
  runAtStart,
  runWhenLeaseFrees,
  runWhileOpen,
  type Jitter,
} from './next-run.js';
import { parseSchedule, type Schedule } from './schedule.js';
import { emptyJobState, type JobState } from './store.js';

const T0 = Date.UTC(2026, 0, 1); // 2026-01-01T00:00:00Z, a Thursday
const S = 1000;
const MIN = 60 * S;

function schedule(spec: Parameters<typeof parseSchedule>[0]): Schedule {
  const r = parseSchedule(spec);
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.schedule;
}
const every = schedule({ every_secs: 60 });
const cron = schedule({ cron: '0 */5 * * * *' });
const ownJitter = schedule({ cron: '0 */5 * * * *', stagger_jitter_ms: 200 });
const at = schedule({ at: '2026-01-01T00:10:00Z' });
const AT = T0 + 10 * MIN;
/** No jitter drawn; `half`: half the bound. */
const none: Jitter = { defaultJitterMs: 0, random: () => 0 };
const half: Jitter = { defaultJitterMs: 1000, random: () => 0.5 };
const state = (over: Partial<JobState> = {}): JobState => ({ ...emptyJobState('j'), ...over });

describe('firstRun', () => {
  const cases: { name: string; s: Schedule; fired: string | null; jitter: Jitter; want: object }[] = [
    {
      name: 'every_secs starts now',
      s: every,
      fired: null,
      jitter: none,
      want: { nominalAt: T0, nextRunAt: T0, scheduleKey: every.key },
    },
    {
      name: 'every_secs with the global jitter',
      s: every,
      fired: null,
      jitter: half,
      want: { nominalAt: T0, nextRunAt: T0 + 500, scheduleKey: every.key },
    },
    {
      name: 'cron: the next fire time',
      s: cron,
      fired: null,
      jitter: none,
      want: { nominalAt: T0 + 5 * MIN, nextRunAt: T0 + 5 * MIN, scheduleKey: cron.key },
    },
    {
      name: 'cron with its own jitter bound, not the global one',
      s: ownJitter,
      fired: null,
      jitter: half,
      want: { nominalAt: T0 + 5 * MIN, nextRunAt: T0 + 5 * MIN + 100, scheduleKey: ownJitter.key },
    },
    {
      name: 'at: its instant, never jittered',
      s: at,
      fired: null,
      jitter: half,
      want: { nominalAt: AT, nextRunAt: AT, scheduleKey: at.key },
    },
    {
      name: 'at that already fired: never again',
      s: at,
      fired: at.key,
      jitter: none,
      want: { nominalAt: null, nextRunAt: null, scheduleKey: at.key },
    },
  ];
  for (const c of cases) it(c.name, () => expect(firstRun(c.s, c.fired, T0, c.jitter)).toEqual(c.want));
});

describe('runAtStart', () => {
  const cases: { name: string; s: Schedule; st: Partial<JobState>; fired?: string; want: object | null }[] = [
    {
      name: 'a stored run time of the same schedule is kept',
      s: every,
      st: { scheduleKey: every.key, nextRunAt: T0 + 30 * S },
      want: null,
    },
    {
      name: 'a changed schedule starts over',
      s: every,
      st: { scheduleKey: cron.key, nextRunAt: T0 + 30 * S },
      want: { nominalAt: T0, nextRunAt: T0, scheduleKey: every.key },
    },
    {
      name: 'a job never scheduled gets its first slot',
      s: cron,
      st: {},
      want: { nominalAt: T0 + 5 * MIN, nextRunAt: T0 + 5 * MIN, scheduleKey: cron.key },
    },
    {
      name: 'a cleared run time of the same schedule gets its first slot',
      s: every,
      st: { scheduleKey: every.key, nextRunAt: null },
      want: { nominalAt: T0, nextRunAt: T0, scheduleKey: every.key },
    },
    {
      name: 'a fired at stays done',
      s: at,
      st: { scheduleKey: at.key, nextRunAt: null },
      fired: at.key,
      want: null,
    },
  ];
  for (const c of cases)
    it(c.name, () => expect(runAtStart(c.s, state(c.st), c.fired ?? null, T0, none)).toEqual(c.want));
});

describe('runAtResume', () => {
  const cases: { name: string; s: Schedule; st: Partial<JobState>; want: object }[] = [
    {
      name: 'one run soon, not a backlog',
      s: every,
      st: { nominalAt: T0 - 60 * MIN },
      want: { nominalAt: T0, nextRunAt: T0, scheduleKey: every.key },
    },
    {
      name: 'a fired at stays done',
      s: at,
      st: { atFired: at.key },
      want: { nextRunAt: null },
    },
    {
      name: 'an open breaker probes at its retry time when that comes first',
      s: cron,
      st: { breakerState: 2, breakerRetryAt: T0 + MIN },
      want: { nominalAt: T0 + 5 * MIN, nextRunAt: T0 + MIN, scheduleKey: cron.key },
    },
    {
      name: 'an open breaker does not move an earlier run later',
      s: every,
      st: { breakerState: 2, breakerRetryAt: T0 + MIN },
      want: { nominalAt: T0, nextRunAt: T0, scheduleKey: every.key },
    },
  ];
  for (const c of cases) it(c.name, () => expect(runAtResume(c.s, state(c.st), T0, none)).toEqual(c.want));
});

describe('runAfterSuccess', () => {
  const cases: {
    name: string;
    s: Schedule;
    nominal: number | null;
    now: number;
    jitter?: Jitter;
    want: object;
  }[] = [
    {
      name: 'every_secs: the next slot on the grid',
      s: every,
      nominal: T0,
      now: T0 + 2 * S,
      want: { nominalAt: T0 + MIN, nextRunAt: T0 + MIN, scheduleKey: every.key },
    },
    {
      name: 'missed slots are skipped: one catch-up, not a backlog',
      s: every,
      nominal: T0,
      now: T0 + 10 * MIN + S,
      want: { nominalAt: T0 + 11 * MIN, nextRunAt: T0 + 11 * MIN, scheduleKey: every.key },
    },
    {
      name: 'the nominal slot moves, jitter only shifts the run time',
      s: every,
      nominal: T0,
      now: T0 + S,
      jitter: half,
      want: { nominalAt: T0 + MIN, nextRunAt: T0 + MIN + 500, scheduleKey: every.key },
    },
    {
      name: 'without a nominal slot the grid starts at now',
      s: every,
      nominal: null,
      now: T0,
      want: { nominalAt: T0 + MIN, nextRunAt: T0 + MIN, scheduleKey: every.key },
    },
    {
      name: 'cron: the next fire time',
      s: cron,
      nominal: T0 + 5 * MIN,
      now: T0 + 5 * MIN + S,
      want: { nominalAt: T0 + 10 * MIN, nextRunAt: T0 + 10 * MIN, scheduleKey: cron.key },
    },
    {
      name: 'at: done and paused',
      s: at,
      nominal: AT,
      now: AT + S,
      want: { paused: true, atFired: at.key, nextRunAt: null, nominalAt: AT, scheduleKey: at.key },
    },
  ];
  for (const c of cases)
    it(c.name, () => expect(runAfterSuccess(c.s, c.nominal, c.now, c.jitter ?? none)).toEqual(c.want));
});

describe('runAfterTransient', () => {
  const hour = schedule({ every_secs: 3600 });
  const cases: { name: string; s: Schedule; n: number; hint: number; jitter?: Jitter; want: number }[] = [
    { name: 'the first error: 5 s', s: hour, n: 1, hint: 0, want: T0 + 5 * S },
    { name: 'doubling: 5 s x 2^(n-1)', s: hour, n: 4, hint: 0, want: T0 + 40 * S },
    { name: 'capped at the interval', s: every, n: 10, hint: 0, want: T0 + MIN },
    { name: 'a longer server wait hint wins', s: hour, n: 1, hint: 30 * S, want: T0 + 30 * S },
    { name: 'a shorter wait hint does not shorten the backoff', s: hour, n: 3, hint: S, want: T0 + 20 * S },
    { name: 'jittered like a slot', s: hour, n: 1, hint: 0, jitter: half, want: T0 + 5 * S + 500 },
  ];
  for (const c of cases)
    it(c.name, () =>
      expect(runAfterTransient(c.s, c.n, c.hint, T0, c.jitter ?? none)).toEqual({
        nextRunAt: c.want,
        scheduleKey: c.s.key,
      }),
    );
});

describe('runWhileOpen', () => {
  const cases: { name: string; s: Schedule; nominal: number | null; retryAt: number; want: object }[] = [
    {
      name: 'the next slot comes first: it is counted skipped',
      s: every,
      nominal: T0,
      retryAt: T0 + 5 * MIN,
      want: { nominalAt: T0 + MIN, nextRunAt: T0 + MIN, scheduleKey: every.key },
    },
    {
      name: 'the probe comes first',
      s: cron,
      nominal: T0,
      retryAt: T0 + 2 * MIN,
      want: { nominalAt: T0 + 5 * MIN, nextRunAt: T0 + 2 * MIN, scheduleKey: cron.key },
    },
    {
      name: 'at: only the probe',
      s: at,
      nominal: AT,
      retryAt: AT + MIN,
      want: { nominalAt: AT, nextRunAt: AT + MIN, scheduleKey: at.key },
    },
  ];
  for (const c of cases)
    it(c.name, () => expect(runWhileOpen(c.s, c.nominal, c.retryAt, T0 + S, none)).toEqual(c.want));
});

describe('state checks and fixed delays', () => {
  const cases: { name: string; got: () => unknown; want: unknown }[] = [
    { name: 'due at its run time', got: () => isDue(state({ nextRunAt: T0 }), T0), want: true },
    { name: 'not due before it', got: () => isDue(state({ nextRunAt: T0 + 1 }), T0), want: false },
    {
      name: 'a paused job is never due',
      got: () => isDue(state({ nextRunAt: T0, paused: true }), T0),
      want: false,
    },
    {
      name: 'nothing left to run is never due',
      got: () => isDue(state({ nextRunAt: null }), T0),
      want: false,
    },
    { name: 'armed at its stored run time', got: () => armTime(state({ nextRunAt: T0 })), want: T0 },
    {
      name: 'a paused job is not armed',
      got: () => armTime(state({ nextRunAt: T0, paused: true })),
      want: null,
    },
    { name: 'a job without state is not armed', got: () => armTime(null), want: null },
    {
      name: 'a busy lease: just after it expires',
      got: () => runWhenLeaseFrees(T0 + MIN, T0),
      want: T0 + MIN + 50,
    },
    { name: 'a busy lease: never sooner than 100 ms', got: () => runWhenLeaseFrees(T0, T0), want: T0 + 100 },
    { name: 'a busy lease of unknown expiry', got: () => runWhenLeaseFrees(null, T0), want: T0 + 100 },
    { name: 'a scheduler error: 5 s later', got: () => runAfterSchedulerError(T0), want: T0 + 5 * S },
    {
      name: 'a Permanent error ends an at',
      got: () => runAfterPermanent(at),
      want: { atFired: at.key, nextRunAt: null },
    },
    { name: 'a Permanent error leaves a recurring schedule', got: () => runAfterPermanent(every), want: {} },
  ];
  for (const c of cases) it(c.name, () => expect(c.got()).toEqual(c.want));
});

describe('nextRealRun', () => {
  const cases: { name: string; st: Partial<JobState>; want: number | null }[] = [
    { name: 'the stored run time', st: { nextRunAt: T0 }, want: T0 },
    { name: 'none while paused', st: { nextRunAt: T0, paused: true }, want: null },
    {
      name: 'open breaker: the probe, not a skipped slot',
      st: { nextRunAt: T0, breakerState: 2, breakerRetryAt: T0 + MIN },
      want: T0 + MIN,
    },
    {
      name: 'open breaker: a slot after the probe',
      st: { nextRunAt: T0 + 2 * MIN, breakerState: 2, breakerRetryAt: T0 + MIN },
      want: T0 + 2 * MIN,
    },
    {
      name: 'half-open: the stored run time',
      st: { nextRunAt: T0, breakerState: 1, breakerRetryAt: T0 + MIN },
      want: T0,
    },
  ];
  for (const c of cases) it(c.name, () => expect(nextRealRun(state(c.st))).toBe(c.want));
});
