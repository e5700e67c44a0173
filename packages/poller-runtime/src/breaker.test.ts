import { describe, expect, it } from 'vitest';
import {
  breakerAfterTransient,
  breakerClosed,
  breakerName,
  breakerProbe,
  breakerSkipsUntil,
  type TransientTransition,
} from './breaker.js';
import type { JobState } from './store.js';

const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;
type Fields = Pick<JobState, 'consecutiveErrors' | 'breakerState' | 'breakerOpenings'>;
const closed = (errors: number): Fields => ({
  consecutiveErrors: errors,
  breakerState: 0,
  breakerOpenings: 0,
});

describe('breakerAfterTransient (threshold 3)', () => {
  const open = (errors: number, openings: number, retryAt: number): TransientTransition => ({
    patch: {
      consecutiveErrors: errors,
      breakerState: 2,
      breakerOpenings: openings,
      breakerOpenedAt: T0,
      breakerRetryAt: retryAt,
    },
    opened: true,
    errors,
    retryAt,
  });
  const cases: { name: string; from: Fields; hint?: number; want: TransientTransition }[] = [
    {
      name: 'below the threshold: one more error, still closed',
      from: closed(0),
      want: { patch: { consecutiveErrors: 1 }, opened: false, errors: 1, retryAt: null },
    },
    {
      name: 'just below the threshold',
      from: closed(1),
      want: { patch: { consecutiveErrors: 2 }, opened: false, errors: 2, retryAt: null },
    },
    { name: 'at the threshold: opens for 60 s', from: closed(2), want: open(3, 1, T0 + MIN) },
    {
      name: 'a failed probe (half-open) opens again for twice as long',
      from: { consecutiveErrors: 3, breakerState: 1, breakerOpenings: 1 },
      want: open(4, 2, T0 + 2 * MIN),
    },
    {
      name: 'a failure while open (a manual run) opens again',
      from: { consecutiveErrors: 5, breakerState: 2, breakerOpenings: 2 },
      want: open(6, 3, T0 + 4 * MIN),
    },
    {
      name: 'the open time is capped at 30 min',
      from: { consecutiveErrors: 9, breakerState: 1, breakerOpenings: 9 },
      want: open(10, 10, T0 + 30 * MIN),
    },
    {
      name: 'a longer server wait hint lengthens the open time',
      from: closed(2),
      hint: 5 * MIN,
      want: open(3, 1, T0 + 5 * MIN),
    },
    {
      name: 'a shorter wait hint does not shorten it',
      from: closed(2),
      hint: 1000,
      want: open(3, 1, T0 + MIN),
    },
  ];
  for (const c of cases)
    it(c.name, () => expect(breakerAfterTransient(c.from, 3, c.hint ?? 0, T0)).toEqual(c.want));
});

describe('breaker states', () => {
  const cases: { name: string; got: () => unknown; want: unknown }[] = [
    {
      name: 'success or reset: closed, no errors, no openings',
      got: () => breakerClosed(),
      want: {
        consecutiveErrors: 0,
        breakerState: 0,
        breakerOpenings: 0,
        breakerOpenedAt: null,
        breakerRetryAt: null,
      },
    },
    {
      name: 'open before its probe time: skipped until then',
      got: () => breakerSkipsUntil({ breakerState: 2, breakerRetryAt: T0 + MIN }, T0),
      want: T0 + MIN,
    },
    {
      name: 'open at its probe time: not skipped',
      got: () => breakerSkipsUntil({ breakerState: 2, breakerRetryAt: T0 }, T0),
      want: null,
    },
    {
      name: 'half-open: not skipped',
      got: () => breakerSkipsUntil({ breakerState: 1, breakerRetryAt: T0 + MIN }, T0),
      want: null,
    },
    {
      name: 'closed: not skipped',
      got: () => breakerSkipsUntil({ breakerState: 0, breakerRetryAt: null }, T0),
      want: null,
    },
    {
      name: 'a tick while open is the probe: half-open',
      got: () => breakerProbe({ breakerState: 2 }),
      want: { breakerState: 1 },
    },
    { name: 'a tick while closed is no probe', got: () => breakerProbe({ breakerState: 0 }), want: null },
    {
      name: 'names',
      got: () => [0, 1, 2, 7].map(breakerName),
      want: ['closed', 'half-open', 'open', 'closed'],
    },
  ];
  for (const c of cases) it(c.name, () => expect(c.got()).toEqual(c.want));
});
