import { describe, expect, it } from 'vitest';
import type { ConfigIssue } from '@agent/config-snapshot';
import { planReload } from './plan.js';

const j = (id: string, fingerprint = id) => ({ id, fingerprint });
const issue = (message: string): ConfigIssue => ({
  code: 'POLLER_INVALID_CONFIG',
  severity: 'error',
  scope: 'job',
  file: 'config/pollers.yaml',
  path: 'pollers.jobs[0]',
  message,
});
const rej = (id: string | undefined, index = 0) => ({
  ...(id ? { id } : {}),
  index,
  issues: [issue(`bad ${id ?? index}`)],
});

describe('planReload', () => {
  const cases: {
    name: string;
    running: ReturnType<typeof j>[];
    next: ReturnType<typeof j>[];
    rejected: ReturnType<typeof rej>[];
    want: Record<string, string[]>;
  }[] = [
    {
      name: 'nothing running, nothing new',
      running: [],
      next: [],
      rejected: [],
      want: { add: [], replace: [], remove: [], keep: [] },
    },
    {
      name: 'new jobs are added, sorted',
      running: [],
      next: [j('b'), j('a')],
      rejected: [],
      want: { add: ['a', 'b'], replace: [], remove: [], keep: [] },
    },
    {
      name: 'unchanged jobs are kept',
      running: [j('a'), j('b')],
      next: [j('b'), j('a')],
      rejected: [],
      want: { add: [], replace: [], remove: [], keep: ['a', 'b'] },
    },
    {
      name: 'changed definitions are replaced',
      running: [j('a', '1')],
      next: [j('a', '2')],
      rejected: [],
      want: { add: [], replace: ['a'], remove: [], keep: [] },
    },
    {
      name: 'missing jobs are removed',
      running: [j('a'), j('z')],
      next: [j('a')],
      rejected: [],
      want: { add: [], replace: [], remove: ['z'], keep: ['a'] },
    },
    {
      name: 'an invalid new definition keeps the old one running',
      running: [j('a', '1'), j('b')],
      next: [j('b')],
      rejected: [rej('a')],
      want: { add: [], replace: [], remove: [], keep: ['a', 'b'] },
    },
    {
      name: 'an invalid new job is not added',
      running: [],
      next: [],
      rejected: [rej('n')],
      want: { add: [], replace: [], remove: [], keep: [] },
    },
    {
      name: 'everything at once',
      running: [j('keep'), j('chg', '1'), j('gone'), j('bad', '1')],
      next: [j('keep'), j('chg', '2'), j('new')],
      rejected: [rej('bad', 3)],
      want: { add: ['new'], replace: ['chg'], remove: ['gone'], keep: ['bad', 'keep'] },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const plan = planReload(c.running, c.next, c.rejected);
      expect({ add: plan.add, replace: plan.replace, remove: plan.remove, keep: plan.keep }).toEqual(c.want);
      expect(plan.rejected.map((r) => r.id)).toEqual(c.rejected.map((r) => r.id).sort());
    });

  it('lists rejected jobs with their located errors; entries without an id are named by index', () => {
    const plan = planReload([], [], [rej(undefined, 4), rej('x', 1)]);
    expect(plan.rejected).toEqual([
      { id: 'jobs[4]', errors: ['config/pollers.yaml pollers.jobs[0]: bad 4 [POLLER_INVALID_CONFIG]'] },
      { id: 'x', errors: ['config/pollers.yaml pollers.jobs[0]: bad x [POLLER_INVALID_CONFIG]'] },
    ]);
  });

  it('is pure: inputs are not modified', () => {
    const running = Object.freeze([Object.freeze(j('a'))]);
    const next = Object.freeze([Object.freeze(j('b'))]);
    expect(() => planReload(running, next, [])).not.toThrow();
  });
});
