import type { FamilyOptions, LabelValues } from './family.js';
import { ScalarFamily } from './scalar.js';

/** A labelled counter (prom-client's `Counter` for what it renders), cheap to scrape at many series. */
export class TextCounter<L extends string = string> extends ScalarFamily<L> {
  constructor(options: FamilyOptions<L>) {
    super(options, 'counter');
  }

  /** Adds `value` (default 1; 0 makes the series at zero) to a series. */
  inc(labels: LabelValues<L>, value = 1): void {
    if (!Number.isFinite(value)) throw new TypeError(`metric ${this.name}: ${value} is not a finite number`);
    if (value < 0) throw new RangeError(`metric ${this.name}: a counter cannot decrease (${value})`);
    const slot = this.slotFor(labels);
    this.values[slot] = this.values[slot]! + value;
  }
}
