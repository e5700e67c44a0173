import { grown, LabelledFamily, type FamilyOptions, type LabelValues, type SampleValue } from './family.js';
import { formatValue } from './text.js';

/** A labelled gauge (prom-client's `Gauge` for what it renders), cheap to scrape at many series. */
export class TextGauge<L extends string = string> extends LabelledFamily<L> {
  private values = new Float64Array(0);

  constructor(options: FamilyOptions<L>) {
    super(options, 'gauge');
    this.reset();
    this.registerIn(options.registers);
  }

  /** Sets a series to `value` (NaN and the infinities are values too), making it when needed. */
  set(labels: LabelValues<L>, value: number): void {
    if (typeof value !== 'number')
      throw new TypeError(`metric ${this.name}: ${String(value)} is not a number`);
    const slot = this.slotFor(labels); // first: making the series may replace `values`
    this.values[slot] = value;
  }

  protected resize(capacity: number): void {
    this.values = grown(this.values, capacity);
  }

  protected clearSlot(slot: number): void {
    this.values[slot] = 0;
  }

  protected renderSeries(text: string, slot: number, lines: string[]): void {
    const value = formatValue(this.values[slot]!);
    lines.push(text ? `${this.name}{${text}} ${value}` : `${this.name} ${value}`);
  }

  protected samplesOf(slot: number, labels: Record<string, string>, into: SampleValue[]): void {
    into.push({ value: this.values[slot]!, labels });
  }
}
