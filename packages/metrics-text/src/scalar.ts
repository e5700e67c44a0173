import { grown, LabelledFamily, type FamilyOptions, type SampleValue } from './family.js';
import { formatValue } from './text.js';

/** A family with one number per series: what a counter and a gauge share. */
export abstract class ScalarFamily<L extends string> extends LabelledFamily<L> {
  protected values = new Float64Array(0);

  protected constructor(options: FamilyOptions<L>, type: 'counter' | 'gauge') {
    super(options, type);
    this.reset();
    this.registerIn(options.registers);
  }

  protected resize(capacity: number): void {
    this.values = grown(this.values, capacity);
  }

  protected clearSlot(slot: number): void {
    this.values[slot] = 0;
  }

  protected renderSeries(text: string, slot: number): string {
    const value = formatValue(this.values[slot]!);
    return text ? `\n${this.name}{${text}} ${value}` : `\n${this.name} ${value}`;
  }

  protected samplesOf(slot: number, labels: Record<string, string>, into: SampleValue[]): void {
    into.push({ value: this.values[slot]!, labels });
  }
}
