import { describe, expect, it } from 'vitest';
import { idle, newJob, waitFor, withLock } from './job.js';
import type { JobDefinition } from './validate.js';

const later = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a job lock', () => {
  it('runs locked work one at a time in order, also after a failure, and counts what is pending', async () => {
    const rt = newJob({ id: 'j' } as JobDefinition);
    const order: string[] = [];
    const a = withLock(rt, async () => {
      await later(20);
      order.push('a');
      throw new Error('a failed');
    });
    const b = withLock(rt, async () => void order.push('b'));
    expect(rt.pending).toBe(2);
    await expect(a).rejects.toThrow('a failed');
    await b;
    await waitFor([rt]);
    expect(order).toEqual(['a', 'b']);
    expect(rt.pending).toBe(0);
  });

  it('waitFor waits for the work queued so far; idle also for work queued meanwhile', async () => {
    const jobs = new Map([['j', newJob({ id: 'j' } as JobDefinition)]]);
    const rt = jobs.get('j')!;
    let done = 0;
    void withLock(rt, async () => {
      await later(10);
      done++;
      // Work that queues more work: idle must wait for it too.
      void withLock(rt, async () => {
        await later(10);
        done++;
      });
    });
    await waitFor(jobs.values());
    expect(done).toBe(1);
    await idle(() => jobs.values());
    expect(done).toBe(2);
    expect(rt.pending).toBe(0);
  });
});
