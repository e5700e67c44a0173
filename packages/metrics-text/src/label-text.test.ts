import { describe, expect, it } from 'vitest';
import { TextCounter, TextGauge } from './index.js';

describe('label text of frozen label objects', () => {
  it('a frozen object gives the same series at every update, also in a family of the same label names', () => {
    const ticks = new TextCounter({ name: 'a_total', help: 'a', labelNames: ['job_id'] });
    const last = new TextGauge({ name: 'b', help: 'b', labelNames: ['job_id'] });
    const labels = Object.freeze({ job_id: 'j"1' });
    ticks.inc(labels);
    ticks.inc(labels, 2);
    ticks.inc({ job_id: 'j"1' });
    last.set(labels, 5);
    expect(ticks.renderText().split('\n').slice(2)).toEqual(['a_total{job_id="j\\"1"} 4']);
    expect(last.renderText().split('\n').slice(2)).toEqual(['b{job_id="j\\"1"} 5']);
  });

  it('a mutable object changed between updates counts in the series of its new values', () => {
    const ticks = new TextCounter({ name: 'c_total', help: 'c', labelNames: ['job_id'] });
    const labels = { job_id: 'one' };
    ticks.inc(labels);
    labels.job_id = 'two';
    ticks.inc(labels);
    expect(ticks.renderText().split('\n').slice(2)).toEqual([
      'c_total{job_id="one"} 1',
      'c_total{job_id="two"} 1',
    ]);
  });

  it('a frozen object with a missing or extra label is still refused, every time', () => {
    const ticks = new TextCounter({ name: 'd_total', help: 'd', labelNames: ['job_id', 'kind'] });
    const missing = Object.freeze({ job_id: 'x' }) as never;
    expect(() => ticks.inc(missing)).toThrow(/label "kind" is missing/);
    expect(() => ticks.inc(missing)).toThrow(/label "kind" is missing/);
    const extra = Object.freeze({ job_id: 'x', kind: 'rss', agent: 'a' }) as never;
    expect(() => ticks.inc(extra)).toThrow(/labels other than/);
  });
});
