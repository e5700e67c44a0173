import { grown, LabelledFamily, type FamilyOptions, type LabelValues, type SampleValue } from './family.js';
import { formatValue } from './text.js';

/** A labelled counter (prom-client's `Counter` for what it renders), cheap to scrape at many series. */
export class TextCounter<L extends string = string> extends LabelledFamily<L> {
  private values = new Float64Array(0);

  constructor(options: FamilyOptions<L>) {
    super(options, 'counter');
    this.reset();
    this.registerIn(options.registers);
  }

  /** Adds `value` (default 1; 0 makes the series at zero) to a series. */
  inc(labels: LabelValues<L>, value = 1): void {
    if (!Number.isFinite(value)) throw new TypeError(`metric ${this.name}: ${value} is not a finite number`);
    if (value < 0) throw new RangeError(`metric ${this.name}: a counter cannot decrease (${value})`);
    const slot = this.slotFor(labels);
    this.values[slot] = this.values[slot]! + value;
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
