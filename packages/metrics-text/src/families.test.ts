import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesIndex, TextCounter, TextGauge, TextHistogram, renderMetrics } from './index.js';

const JOB = ['kind', 'agent', 'job_id'] as const;
const job = (id: string) => ({ kind: 'rss', agent: 'a', job_id: id });

/** The sample lines of a family (HELP and TYPE left out). */
const samples = (family: { renderText(): string }) =>
  family
    .renderText()
    .split('\n')
    .filter((l) => !l.startsWith('#'));

describe('TextCounter', () => {
  it('adds 1 by default, makes a series at zero with 0 and renders HELP, TYPE and one line per series', () => {
    const c = new TextCounter({ name: 'x_total', help: 'Things.', labelNames: JOB });
    c.inc(job('j1'));
    c.inc(job('j1'), 2.5);
    c.inc(job('j2'), 0);
    expect(c.renderText()).toBe(
      [
        '# HELP x_total Things.',
        '# TYPE x_total counter',
        'x_total{kind="rss",agent="a",job_id="j1"} 3.5',
        'x_total{kind="rss",agent="a",job_id="j2"} 0',
      ].join('\n'),
    );
  });

  it('refuses a decrease, a value that is not finite, a missing label and a label it does not have', () => {
    const c = new TextCounter({ name: 'x_total', help: 'x', labelNames: ['job_id'] });
    expect(() => c.inc({ job_id: 'j' }, -1)).toThrow(RangeError);
    expect(() => c.inc({ job_id: 'j' }, Number.NaN)).toThrow(TypeError);
    expect(() => c.inc({ job_id: 'j' }, Infinity)).toThrow(TypeError);
    expect(() => c.inc({} as never)).toThrow(/label "job_id" is missing/);
    expect(() => c.inc({ job_id: 'j', other: 'o' } as never)).toThrow(/labels other than job_id/);
    expect(samples(c)).toEqual([]);
  });

  it('an unlabelled counter starts at zero, like prom-client', () => {
    const c = new TextCounter({ name: 'y_total', help: 'y', labelNames: [] });
    expect(samples(c)).toEqual(['y_total 0']);
    c.inc({}, 4);
    expect(samples(c)).toEqual(['y_total 4']);
    c.reset();
    expect(samples(c)).toEqual(['y_total 0']);
  });

  it('a removed series is gone; made again it starts at zero and comes last', () => {
    const c = new TextCounter({ name: 'x_total', help: 'x', labelNames: ['job_id'] });
    c.inc({ job_id: 'a' }, 5);
    c.inc({ job_id: 'b' }, 7);
    c.remove({ job_id: 'a' });
    c.remove({ job_id: 'never' });
    expect(samples(c)).toEqual(['x_total{job_id="b"} 7']);
    c.inc({ job_id: 'a' });
    expect(samples(c)).toEqual(['x_total{job_id="b"} 7', 'x_total{job_id="a"} 1']);
    c.reset();
    expect(samples(c)).toEqual([]);
  });
});

describe('TextGauge', () => {
  it('keeps every value while its arrays grow, and reuses removed slots at their new value', () => {
    const g = new TextGauge({ name: 'g', help: 'g', labelNames: ['job_id'] });
    for (let i = 0; i < 100; i++) g.set({ job_id: `j${i}` }, i * 1.5);
    for (let i = 1; i < 100; i += 2) g.remove({ job_id: `j${i}` });
    for (let i = 100; i < 150; i++) g.set({ job_id: `j${i}` }, -i);
    // The kept ones include j0, j16, j32 and j64: the series whose set grew the arrays.
    const want = [
      ...Array.from({ length: 50 }, (_, k) => `g{job_id="j${2 * k}"} ${2 * k * 1.5}`),
      ...Array.from({ length: 50 }, (_, k) => `g{job_id="j${100 + k}"} -${100 + k}`),
    ];
    expect(samples(g)).toEqual(want);
  });

  it('renders NaN and the infinities as the text format spells them', () => {
    const g = new TextGauge({ name: 'g', help: 'g', labelNames: ['v'] });
    g.set({ v: 'nan' }, Number.NaN);
    g.set({ v: 'inf' }, Infinity);
    g.set({ v: 'minf' }, -Infinity);
    g.set({ v: 'big' }, 1e21);
    g.set({ v: 'small' }, 1e-7);
    expect(samples(g)).toEqual([
      'g{v="nan"} NaN',
      'g{v="inf"} +Inf',
      'g{v="minf"} -Inf',
      'g{v="big"} 1e+21',
      'g{v="small"} 1e-7',
    ]);
  });

  it('escapes label values (backslash, double quote, newline) once, and HELP text (backslash, newline)', () => {
    const g = new TextGauge({ name: 'g', help: 'a "quoted" \\ help\nsecond line', labelNames: ['job_id'] });
    g.set({ job_id: 'a\\b"c"\nd' }, 1);
    g.set({ job_id: 'a\\b"c"\nd' }, 2);
    g.set({ job_id: 'ünï €' }, 3);
    expect(g.renderText()).toBe(
      [
        '# HELP g a "quoted" \\\\ help\\nsecond line',
        '# TYPE g gauge',
        'g{job_id="a\\\\b\\"c\\"\\nd"} 2',
        'g{job_id="ünï €"} 3',
      ].join('\n'),
    );
  });

  it('takes number label values as their text', () => {
    const g = new TextGauge({ name: 'g', help: 'g', labelNames: ['shard'] });
    g.set({ shard: 3 }, 1);
    g.set({ shard: '3' }, 2);
    expect(samples(g)).toEqual(['g{shard="3"} 2']);
  });
});

const make = () =>
  new TextHistogram({ name: 'lat_ms', help: 'Latency.', labelNames: ['job_id'], buckets: [10, 100, 1000] });

describe('TextHistogram', () => {
  it('renders cumulative buckets with le first, +Inf, _sum and _count; a value on a bound counts in it', () => {
    const h = make();
    for (const v of [1, 10, 10.5, 100, 999, 5000]) h.observe({ job_id: 'j' }, v);
    expect(h.renderText()).toBe(
      [
        '# HELP lat_ms Latency.',
        '# TYPE lat_ms histogram',
        'lat_ms_bucket{le="10",job_id="j"} 2',
        'lat_ms_bucket{le="100",job_id="j"} 4',
        'lat_ms_bucket{le="1000",job_id="j"} 5',
        'lat_ms_bucket{le="+Inf",job_id="j"} 6',
        'lat_ms_sum{job_id="j"} 6120.5',
        'lat_ms_count{job_id="j"} 6',
      ].join('\n'),
    );
  });

  it('a removed series made again (in a reused slot) starts empty', () => {
    const h = make();
    h.observe({ job_id: 'a' }, 50);
    h.observe({ job_id: 'b' }, 5);
    h.remove({ job_id: 'a' });
    h.observe({ job_id: 'c' }, 2000);
    expect(samples(h)).toEqual([
      'lat_ms_bucket{le="10",job_id="b"} 1',
      'lat_ms_bucket{le="100",job_id="b"} 1',
      'lat_ms_bucket{le="1000",job_id="b"} 1',
      'lat_ms_bucket{le="+Inf",job_id="b"} 1',
      'lat_ms_sum{job_id="b"} 5',
      'lat_ms_count{job_id="b"} 1',
      'lat_ms_bucket{le="10",job_id="c"} 0',
      'lat_ms_bucket{le="100",job_id="c"} 0',
      'lat_ms_bucket{le="1000",job_id="c"} 0',
      'lat_ms_bucket{le="+Inf",job_id="c"} 1',
      'lat_ms_sum{job_id="c"} 2000',
      'lat_ms_count{job_id="c"} 1',
    ]);
  });

  it('an unlabelled histogram renders its empty series from the start', () => {
    const h = new TextHistogram({ name: 'h', help: 'h', labelNames: [], buckets: [0.5] });
    expect(samples(h)).toEqual(['h_bucket{le="0.5"} 0', 'h_bucket{le="+Inf"} 0', 'h_sum 0', 'h_count 0']);
  });

  it('refuses bad buckets, an le label and observations that are not finite, and registers nothing then', () => {
    const registry = new Registry();
    const registers = [registry];
    const bad =
      (buckets: number[], labelNames: string[] = []) =>
      () =>
        new TextHistogram({ name: 'h', help: 'h', labelNames, buckets, registers });
    expect(bad([])).toThrow(RangeError);
    expect(bad([10, 5])).toThrow(RangeError);
    expect(bad([10, 10])).toThrow(RangeError);
    expect(bad([1, Infinity])).toThrow(RangeError);
    expect(bad([1], ['le'])).toThrow(/"le"/);
    expect(registry.getMetricsAsArray()).toEqual([]);
    expect(() => make().observe({ job_id: 'j' }, Number.NaN)).toThrow(TypeError);
  });
});

describe('in a prom-client Registry', () => {
  it('is found by name, answers get() and getMetricsAsJSON() in prom-client shape, and takes resetMetrics()', async () => {
    const registry = new Registry();
    const c = new TextCounter({ name: 'c_total', help: 'c', labelNames: JOB, registers: [registry] });
    const h = new TextHistogram({
      name: 'h',
      help: 'h',
      labelNames: ['job_id'],
      buckets: [1],
      registers: [registry],
    });
    c.inc(job('j1'), 2);
    h.observe({ job_id: 'j1' }, 0.5);
    expect(registry.getSingleMetric('c_total')).toBe(c);
    expect(await registry.getSingleMetric('c_total')!.get()).toEqual({
      name: 'c_total',
      help: 'c',
      type: 'counter',
      aggregator: 'sum',
      values: [{ value: 2, labels: { kind: 'rss', agent: 'a', job_id: 'j1' } }],
    });
    const [, hist] = await registry.getMetricsAsJSON();
    expect(hist!.values).toEqual([
      { value: 1, labels: { le: 1, job_id: 'j1' }, metricName: 'h_bucket' },
      { value: 1, labels: { le: '+Inf', job_id: 'j1' }, metricName: 'h_bucket' },
      { value: 0.5, labels: { job_id: 'j1' }, metricName: 'h_sum' },
      { value: 1, labels: { job_id: 'j1' }, metricName: 'h_count' },
    ]);
    registry.resetMetrics();
    expect(await renderMetrics(registry)).toBe(
      '# HELP c_total c\n# TYPE c_total counter\n\n# HELP h h\n# TYPE h histogram\n',
    );
  });

  it('a second family of the same name is refused, as prom-client refuses it', () => {
    const registry = new Registry();
    const first = new TextGauge({ name: 'g', help: 'g', labelNames: [], registers: [registry] });
    expect(registry.getSingleMetric('g')).toBe(first);
    expect(() => new TextGauge({ name: 'g', help: 'g', labelNames: [], registers: [registry] })).toThrow(
      /already been registered/,
    );
  });

  it('refuses names the text format cannot carry', () => {
    expect(() => new TextGauge({ name: 'a-b', help: 'g', labelNames: [] })).toThrow(/metric name/);
    expect(() => new TextGauge({ name: 'g', help: '', labelNames: [] })).toThrow(/help/);
    expect(() => new TextGauge({ name: 'g', help: 'g', labelNames: ['a b'] })).toThrow(/label name/);
    expect(() => new TextGauge({ name: 'g', help: 'g', labelNames: ['__x'] })).toThrow(/label name/);
    expect(() => new TextGauge({ name: 'g', help: 'g', labelNames: ['a', 'a'] })).toThrow(/repeated/);
  });
});

/** Three families of one series index. */
const shared = () => {
  const series = new SeriesIndex(['job_id']);
  const c = new TextCounter({ name: 'c_total', help: 'c', labelNames: ['job_id'], series });
  const g = new TextGauge({ name: 'g', help: 'g', labelNames: ['job_id'], series });
  const h = new TextHistogram({ name: 'h', help: 'h', labelNames: ['job_id'], buckets: [1], series });
  return { series, c, g, h };
};

describe('families sharing a series index', () => {
  it('keep one label text per series; each family renders only the series it has, with its own values', () => {
    const { series, c, g, h } = shared();
    for (let i = 0; i < 40; i++) c.inc({ job_id: `j${i}` }, i); // past the first growth of the arrays
    g.set({ job_id: 'j3' }, 7);
    h.observe({ job_id: 'j39' }, 2);
    g.set({ job_id: 'x' }, 1);
    expect([...series.slots.keys()]).toHaveLength(41);
    expect(samples(c)).toHaveLength(40);
    expect(samples(c)[39]).toBe('c_total{job_id="j39"} 39');
    expect(samples(g)).toEqual(['g{job_id="j3"} 7', 'g{job_id="x"} 1']);
    expect(samples(h)).toEqual([
      'h_bucket{le="1",job_id="j39"} 0',
      'h_bucket{le="+Inf",job_id="j39"} 1',
      'h_sum{job_id="j39"} 2',
      'h_count{job_id="j39"} 1',
    ]);
  });

  it('a series removed from one family stays in the others; gone from all, its slot is reused at zero', async () => {
    const { series, c, g } = shared();
    c.inc({ job_id: 'a' }, 5);
    g.set({ job_id: 'a' }, 2);
    c.inc({ job_id: 'b' }, 1);
    c.remove({ job_id: 'a' });
    expect(samples(c)).toEqual(['c_total{job_id="b"} 1']);
    expect(samples(g)).toEqual(['g{job_id="a"} 2']);
    // Made again while the gauge holds it: back at its place, from zero.
    c.inc({ job_id: 'a' });
    expect(samples(c)).toEqual(['c_total{job_id="a"} 1', 'c_total{job_id="b"} 1']);
    c.remove({ job_id: 'a' });
    g.remove({ job_id: 'a' });
    expect([...series.slots.keys()]).toEqual(['job_id="b"']);
    g.set({ job_id: 'z' }, 3);
    expect(series.slots.get('job_id="z"')).toBe(0); // a's slot
    expect(samples(c)).toEqual(['c_total{job_id="b"} 1']);
    expect((await g.get()).values).toEqual([{ value: 3, labels: { job_id: 'z' } }]);
  });

  it("a reset lets go of the family's series only", () => {
    const { series, c, g } = shared();
    c.inc({ job_id: 'a' });
    g.set({ job_id: 'a' }, 1);
    g.set({ job_id: 'b' }, 1);
    g.reset();
    expect(samples(g)).toEqual([]);
    expect([...series.slots.keys()]).toEqual(['job_id="a"']);
    expect(samples(c)).toEqual(['c_total{job_id="a"} 1']);
  });

  it('refuses an index of other label names', () => {
    const series = new SeriesIndex(['job_id']);
    expect(
      () => new TextCounter({ name: 'c_total', help: 'c', labelNames: ['agent'], series } as never),
    ).toThrow(/series index is for labels job_id/);
  });
});
