/**
 * The text families against prom-client: the same values written through prom-client's own Counter, Gauge
 * and Histogram (with the same buckets) give the same bytes.
 */
import fc from 'fast-check';
import { Counter, Gauge, Histogram, Registry, type OpenMetricsContentType } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TextCounter, TextGauge, TextHistogram, renderMetrics, renderMetricsChunks } from './index.js';

const JOB = ['kind', 'agent', 'job_id'] as const;
const BUCKETS = [10, 50, 100, 250, 1000, 2500, 10_000, 60_000];

type Job = { kind: string; agent: string; job_id: string };
type Op =
  | { op: 'tick'; job: Job; status: string; ms: number }
  | { op: 'gauge'; id: string; value: number }
  | { op: 'remove'; job: Job };

/** The same families twice: prom-client's in `theirs`, ours in `ours`, with one operation applied to both. */
function twins() {
  const theirs = new Registry();
  const ours = new Registry();
  const help = 'Help with a \\ backslash,\na newline and "quotes".';
  const ticks = [
    new Counter({ name: 't_total', help, labelNames: [...JOB, 'status'], registers: [theirs] }),
    new TextCounter({ name: 't_total', help, labelNames: [...JOB, 'status'], registers: [ours] }),
  ] as const;
  const latency = [
    new Histogram({ name: 'l_ms', help, labelNames: JOB, buckets: BUCKETS, registers: [theirs] }),
    new TextHistogram({ name: 'l_ms', help, labelNames: JOB, buckets: BUCKETS, registers: [ours] }),
  ] as const;
  const gauge = [
    new Gauge({ name: 'g', help, labelNames: ['job_id'], registers: [theirs] }),
    new TextGauge({ name: 'g', help, labelNames: ['job_id'], registers: [ours] }),
  ] as const;
  const apply = (o: Op) => {
    if (o.op === 'tick') {
      // A literal in label-name order: prom-client renders labels in the order of the first object it got.
      const labels = { kind: o.job.kind, agent: o.job.agent, job_id: o.job.job_id, status: o.status };
      ticks[0].inc(labels);
      ticks[1].inc(labels);
      latency[0].observe(o.job, o.ms);
      latency[1].observe(o.job, o.ms);
    } else if (o.op === 'gauge') {
      gauge[0].set({ job_id: o.id }, o.value);
      gauge[1].set({ job_id: o.id }, o.value);
    } else {
      for (const s of ['ok', 'transient']) {
        ticks[0].remove({ ...o.job, status: s });
        ticks[1].remove({ ...o.job, status: s });
      }
      latency[0].remove(o.job);
      latency[1].remove(o.job);
      gauge[0].remove({ job_id: o.job.job_id });
      gauge[1].remove({ job_id: o.job.job_id });
    }
  };
  return { theirs, ours, apply };
}

// No ':' or ',': prom-client keys its series by `name:value,` unescaped, so such values can collide there.
const labelValue = fc.oneof(
  fc.constantFrom('rss', 'a', 'feed-1', 'with "quotes"', 'back\\slash', 'new\nline', 'ünï €', ''),
  fc.string({ maxLength: 6, unit: fc.constantFrom('a', 'b', '"', '\\', '\n', ' ', 'ü', '€', '{', '=') }),
);
const jobArb = fc.record({ kind: labelValue, agent: labelValue, job_id: labelValue });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant('tick' as const),
    job: jobArb,
    status: fc.constantFrom('ok', 'transient'),
    ms: fc.oneof(fc.constantFrom(0, 10, 50, 60_000, 60_001), fc.double({ min: 0, max: 1e6, noNaN: true })),
  }),
  fc.record({
    op: fc.constant('gauge' as const),
    id: labelValue,
    // NaN is the one sample spelled differently (prom-client writes "Nan"): see below.
    value: fc.oneof(fc.double({ noNaN: true }), fc.constantFrom(Infinity, -Infinity, 0, 1e21, 1e-7)),
  }),
  fc.record({ op: fc.constant('remove' as const), job: jobArb }),
);

const feedJob = (i: number): Job => ({ kind: 'rss', agent: 'a', job_id: `feed-${i}` });

async function allChunks(registry: Registry): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of renderMetricsChunks(registry)) chunks.push(chunk);
  return chunks;
}

describe('renderMetrics against prom-client', () => {
  it('gives the bytes registry.metrics() gives for the same operations on prom-client metrics', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), async (ops) => {
        const { theirs, ours, apply } = twins();
        ops.forEach(apply);
        expect(await renderMetrics(ours)).toBe(await theirs.metrics());
      }),
      { numRuns: 300 },
    );
  });

  it('in chunks, gives the UTF-8 bytes of the text, split in several chunks when it is large', async () => {
    const { ours, apply } = twins();
    for (let i = 0; i < 3000; i++) {
      apply({
        op: 'tick',
        job: { kind: 'rss', agent: `ünï €${i % 7}`, job_id: `feed-${i}` },
        status: 'ok',
        ms: i,
      });
    }
    const chunks = await allChunks(ours);
    expect(chunks.length).toBeGreaterThan(3);
    expect(Buffer.concat(chunks).toString('utf8')).toBe(await renderMetrics(ours));
    expect(Buffer.concat(await allChunks(new Registry()))).toEqual(Buffer.from('\n'));
  });

  it('makes each chunk when it is asked for: a series changed meanwhile is rendered with its new value', async () => {
    const { ours, apply } = twins();
    for (let i = 0; i < 3000; i++) apply({ op: 'tick', job: feedJob(i), status: 'ok', ms: 1 });
    const chunks = renderMetricsChunks(ours);
    const first = (await chunks.next()).value as Buffer;
    // The last job's series are far past the first chunk: a tick now is in the text that follows.
    apply({ op: 'tick', job: feedJob(2999), status: 'ok', ms: 1 });
    const rest: Buffer[] = [];
    for await (const chunk of chunks) rest.push(chunk);
    const text = Buffer.concat([first, ...rest]).toString('utf8');
    expect(text).toContain('t_total{kind="rss",agent="a",job_id="feed-2999",status="ok"} 2\n');
    expect(text).toContain('t_total{kind="rss",agent="a",job_id="feed-0",status="ok"} 1\n');
  });

  it('writes a series removed and made again while the scrape runs once, and leaves out one removed', async () => {
    const { ours, apply } = twins();
    for (let i = 0; i < 3000; i++) apply({ op: 'tick', job: feedJob(i), status: 'ok', ms: 1 });
    const chunks = renderMetricsChunks(ours);
    const first = (await chunks.next()).value as Buffer;
    // feed-0 was in the first chunk; made again it goes to the end of its family's series.
    apply({ op: 'remove', job: feedJob(0) });
    apply({ op: 'tick', job: feedJob(0), status: 'ok', ms: 1 });
    apply({ op: 'remove', job: feedJob(2998) });
    const rest: Buffer[] = [];
    for await (const chunk of chunks) rest.push(chunk);
    const text = Buffer.concat([first, ...rest]).toString('utf8');
    const count = (line: string) => text.split('\n').filter((l) => l === line).length;
    expect(count('t_total{kind="rss",agent="a",job_id="feed-0",status="ok"} 1')).toBe(1);
    expect(text).not.toContain('job_id="feed-2998"');
    // Every sample line of the scrape is there once.
    const samples = text.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(new Set(samples.map((l) => l.slice(0, l.lastIndexOf(' ')))).size).toBe(samples.length);
  });

  it('renders the metrics prom-client renders before the first chunk: one that fails, fails the scrape there', async () => {
    const { ours, apply } = twins();
    for (let i = 0; i < 3000; i++) apply({ op: 'tick', job: feedJob(i), status: 'ok', ms: 1 });
    const broken = new Gauge({
      name: 'broken',
      help: 'b',
      registers: [ours],
      collect() {
        throw new Error('collector failed');
      },
    });
    expect(ours.getSingleMetric('broken')).toBe(broken);
    await expect(renderMetricsChunks(ours).next()).rejects.toThrow('collector failed');
  });

  it('renders a registry of text families and prom-client metrics alike, in registration order', async () => {
    const registry = new Registry();
    new Counter({ name: 'before_total', help: 'b', registers: [registry] }).inc(2);
    new TextGauge({ name: 'text_g', help: 't', labelNames: ['job_id'], registers: [registry] }).set(
      { job_id: 'x' },
      1,
    );
    new Histogram({
      name: 'after',
      help: 'a',
      buckets: [1],
      labelNames: ['op'],
      registers: [registry],
    }).observe({ op: 'commit' }, 0.5);
    const empty = new Gauge({ name: 'empty', help: 'e', labelNames: ['x'], registers: [registry] });
    expect(registry.getSingleMetric('empty')).toBe(empty);
    const text = await renderMetrics(registry);
    expect(text).toBe(await registry.metrics());
    expect(text).toContain('\n\n# HELP text_g t\n# TYPE text_g gauge\ntext_g{job_id="x"} 1\n\n# HELP after');
    expect(text.endsWith('# TYPE empty gauge\n')).toBe(true);
    expect(await renderMetrics(new Registry())).toBe(await new Registry().metrics());
  });

  it("prom-client's own rendering of a text family (its get()) gives the same bytes as the family's", async () => {
    const { ours, apply } = twins();
    apply({ op: 'tick', job: { kind: 'k"', agent: 'a\\', job_id: 'j\n' }, status: 'ok', ms: 12 });
    apply({ op: 'gauge', id: 'j', value: -3.25 });
    expect(await renderMetrics(ours)).toBe(await ours.metrics());
  });

  it('spells NaN as the text format does, where prom-client writes "Nan" (Prometheus reads both)', async () => {
    const { theirs, ours, apply } = twins();
    apply({ op: 'gauge', id: 'j', value: Number.NaN });
    expect(await renderMetrics(ours)).toContain('g{job_id="j"} NaN\n');
    expect(await theirs.metrics()).toContain('g{job_id="j"} Nan\n');
  });

  it('leaves a registry set to OpenMetrics to prom-client whole', async () => {
    const registry = new Registry<OpenMetricsContentType>();
    registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    new Counter({ name: 'x_total', help: 'x', registers: [registry] }).inc();
    const text = await renderMetrics(registry);
    expect(text).toBe(await registry.metrics());
    expect(text.endsWith('# EOF\n')).toBe(true);
  });
});
