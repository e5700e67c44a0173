import { describe, expect, it } from 'vitest';
import {
  leaseStep,
  MAX_START_RETRY_MS,
  sideStep,
  startRetryMs,
  type LeaseStep,
  type OwnerView,
  type SideStep,
} from './owner-decision.js';

const owner: OwnerView = {
  released: false,
  trusted: true,
  held: true,
  lostBy: 'term lost',
  side: 'stopped',
  backingOff: false,
};

const START: SideStep = { kind: 'start' };
const NONE: SideStep = { kind: 'none' };
const stop = (reason: string): SideStep => ({ kind: 'stop', reason }) as SideStep;

describe('sideStep', () => {
  const rows: [string, Partial<OwnerView>, SideStep][] = [
    ['held and stopped: start', {}, START],
    ['held, stopped, backing off after a failed start: wait', { backingOff: true }, NONE],
    ['not held: no start', { held: false }, NONE],
    ['untrusted: no start even when held', { trusted: false }, NONE],
    ['released: no start', { released: true }, NONE],
    ['running and held: keep running', { side: 'running' }, NONE],
    ['running, term lost', { side: 'running', held: false }, stop('term lost')],
    [
      'running, trust window expired',
      { side: 'running', held: false, lostBy: 'trust window expired' },
      stop('trust window expired'),
    ],
    ['running, membership untrusted', { side: 'running', trusted: false }, stop('membership untrusted')],
    ['running, released', { side: 'running', released: true }, stop('released')],
    [
      'released wins over other reasons',
      { side: 'running', released: true, trusted: false, held: false },
      stop('released'),
    ],
    ['a start in flight finishes first, even when lost', { side: 'starting', held: false }, NONE],
    ['a stop in flight finishes first, even when held again', { side: 'stopping' }, NONE],
  ];
  it.each(rows)('%s', (_, change, expected) => {
    expect(sideStep({ ...owner, ...change })).toEqual(expected);
  });
});

describe('leaseStep', () => {
  const rows: [string, Partial<OwnerView>, LeaseStep][] = [
    ['not held: try to take it', { held: false }, 'campaign'],
    ['held and running: renew', { side: 'running' }, 'campaign'],
    ['backing off, still held, side stopped: give it up', { backingOff: true }, 'give-up'],
    ['backing off, not held: do not try', { backingOff: true, held: false }, 'none'],
    [
      'untrusted, side still running: neither renew nor give up yet',
      { trusted: false, side: 'running' },
      'none',
    ],
    ['untrusted, side stopping: wait for it', { trusted: false, side: 'stopping' }, 'none'],
    ['untrusted, side stopped: give it up', { trusted: false }, 'give-up'],
    ['untrusted, not held: do not try', { trusted: false, held: false }, 'none'],
    ['released, side stopped: give it up', { released: true }, 'give-up'],
    ['released, not held: nothing', { released: true, held: false }, 'none'],
  ];
  it.each(rows)('%s', (_, change, expected) => {
    expect(leaseStep({ ...owner, ...change })).toEqual(expected);
  });
});

describe('startRetryMs', () => {
  it('doubles from the base after each failure in a row, up to the cap', () => {
    expect([1, 2, 3, 4].map((n) => startRetryMs(n, 5000))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(startRetryMs(5, 5000)).toBe(MAX_START_RETRY_MS);
    expect(startRetryMs(50, 5000)).toBe(MAX_START_RETRY_MS);
  });

  it('never waits less than the base', () => {
    expect(startRetryMs(0, 500)).toBe(500);
    expect(startRetryMs(3, 90_000)).toBe(90_000);
  });
});
