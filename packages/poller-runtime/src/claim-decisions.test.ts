import { describe, expect, it } from 'vitest';
import { claimLimit, claimSleepMs, skewOf, type SleepInput } from './claim-decisions.js';

describe('claim sizing', () => {
  it.each([
    [64, 0, 10],
    [64, 55, 9],
    [64, 64, 0],
    [64, 70, 0],
    [3, 1, 2],
    [1, 0, 1],
  ])('max %i with %i in flight claims %i', (max, inFlight, limit) => {
    expect(claimLimit(max, inFlight)).toBe(limit);
  });
});

describe('claim loop sleep', () => {
  const base: SleepInput = {
    claimed: 0,
    limit: 10,
    nextDueAt: null,
    dbNow: 1_000_000,
    pollMaxMs: 1000,
    random: 0.5,
  };
  it.each<[string, Partial<SleepInput>, number]>([
    ['a full batch claims again at once', { claimed: 10 }, 0],
    ['a partial batch sleeps until the next due job', { claimed: 3, nextDueAt: 1_000_400 }, 400],
    ['nothing due soon: at most pollMaxMs', { nextDueAt: 1_060_000 }, 1000],
    ['nothing due at all: pollMaxMs', {}, 1000],
    ['a job already due (skipped as locked): no sleep', { nextDueAt: 999_000 }, 0],
    ['phase -10 %', { nextDueAt: 1_000_500, random: 0 }, 450],
    ['phase +10 %', { nextDueAt: 1_000_500, random: 0.999_999 }, 550],
    ['at capacity (nothing asked): pollMaxMs, woken when a tick ends', { limit: 0 }, 1000],
  ])('%s', (_name, over, ms) => {
    expect(claimSleepMs({ ...base, ...over })).toBe(ms);
  });
});

describe('clock skew', () => {
  it.each([
    [10_000, 9_000, 9_010, 995],
    [10_000, 100_000, 100_000, -90_000],
    [5, 5, 5, 0],
  ])('db %i, host %i..%i: skew %i', (db, sent, received, skew) => {
    expect(skewOf(db, sent, received)).toBe(skew);
  });
});
