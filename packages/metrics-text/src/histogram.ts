import { grown, LabelledFamily, type FamilyOptions, type LabelValues, type SampleValue } from './family.js';
import { formatValue } from './text.js';

export interface HistogramOptions<L extends string> extends FamilyOptions<L> {
  /** Upper bounds of the buckets, finite and increasing; `+Inf` is always added. */
  buckets: readonly number[];
}

/**
 * A labelled histogram (prom-client's `Histogram` for what it renders), cheap to scrape at many series:
 * one count per bucket per series in one typed array, made cumulative while rendering.
 */
export class TextHistogram<L extends string = string> extends LabelledFamily<L> {
  readonly buckets: readonly number[];
  /** Observations of slot s that fell in bucket i (not cumulative) at [s * buckets.length + i]. */
  private counts = new Float64Array(0);
  private sums = new Float64Array(0);
  private totals = new Float64Array(0);
  /** `<name>_bucket{le="<bound>"` plus the comma before the series' labels, per bucket. */
  private readonly bucketOpens: string[];
  private readonly infOpen: string;

  constructor(options: HistogramOptions<L>) {
    super(options, 'histogram');
    if ((this.labelNames as readonly string[]).includes('le')) {
      throw new TypeError(`metric ${this.name}: "le" is the bucket label and cannot be a label name`);
    }
    const b = options.buckets;
    if (b.length === 0 || b.some((x, i) => !Number.isFinite(x) || (i > 0 && x <= b[i - 1]!))) {
      throw new RangeError(`metric ${this.name}: buckets must be finite and increasing, at least one`);
    }
    this.buckets = [...b];
    const comma = this.labelNames.length ? ',' : '';
    this.bucketOpens = this.buckets.map((bound) => `${this.name}_bucket{le="${bound}"${comma}`);
    this.infOpen = `${this.name}_bucket{le="+Inf"${comma}`;
    this.reset();
    this.registerIn(options.registers);
  }

  /** Counts one observation (a finite number) in its bucket, the sum and the count of a series. */
  observe(labels: LabelValues<L>, value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`metric ${this.name}: ${value} is not a finite number`);
    const slot = this.slotFor(labels);
    const bounds = this.buckets;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) {
      const at = slot * bounds.length + i;
      this.counts[at] = this.counts[at]! + 1;
    }
    this.sums[slot] = this.sums[slot]! + value;
    this.totals[slot] = this.totals[slot]! + 1;
  }

  protected resize(capacity: number): void {
    this.counts = grown(this.counts, capacity * this.buckets.length);
    this.sums = grown(this.sums, capacity);
    this.totals = grown(this.totals, capacity);
  }

  protected clearSlot(slot: number): void {
    const n = this.buckets.length;
    this.counts.fill(0, slot * n, slot * n + n);
    this.sums[slot] = 0;
    this.totals[slot] = 0;
  }

  protected renderSeries(text: string, slot: number): string {
    // One string per series, not one per line: fewer pieces for the chunks' joins.
    const n = this.buckets.length;
    const close = `${text}} `;
    let cumulative = 0;
    let block = '';
    for (let i = 0; i < n; i++) {
      cumulative += this.counts[slot * n + i]!;
      block += `\n${this.bucketOpens[i]}${close}${cumulative}`;
    }
    const total = formatValue(this.totals[slot]!);
    const sum = formatValue(this.sums[slot]!);
    block += `\n${this.infOpen}${close}${total}`;
    if (text) block += `\n${this.name}_sum{${close}${sum}\n${this.name}_count{${close}${total}`;
    else block += `\n${this.name}_sum ${sum}\n${this.name}_count ${total}`;
    return block;
  }

  protected samplesOf(slot: number, labels: Record<string, string>, into: SampleValue[]): void {
    const n = this.buckets.length;
    const bucket = `${this.name}_bucket`;
    let cumulative = 0;
    for (let i = 0; i < n; i++) {
      cumulative += this.counts[slot * n + i]!;
      into.push({ value: cumulative, labels: { le: this.buckets[i]!, ...labels }, metricName: bucket });
    }
    const total = this.totals[slot]!;
    into.push(
      { value: total, labels: { le: '+Inf', ...labels }, metricName: bucket },
      { value: this.sums[slot]!, labels: { ...labels }, metricName: `${this.name}_sum` },
      { value: total, labels: { ...labels }, metricName: `${this.name}_count` },
    );
  }
}
