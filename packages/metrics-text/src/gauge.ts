import type { FamilyOptions, LabelValues } from './family.js';
import { ScalarFamily } from './scalar.js';

/** A labelled gauge (prom-client's `Gauge` for what it renders), cheap to scrape at many series. */
export class TextGauge<L extends string = string> extends ScalarFamily<L> {
  constructor(options: FamilyOptions<L>) {
    super(options, 'gauge');
  }

  /** Sets a series to `value` (NaN and the infinities are values too), making it when needed. */
  set(labels: LabelValues<L>, value: number): void {
    if (typeof value !== 'number')
      throw new TypeError(`metric ${this.name}: ${String(value)} is not a number`);
    const slot = this.slotFor(labels); // first: making the series may replace `values`
    this.values[slot] = value;
  }
}
