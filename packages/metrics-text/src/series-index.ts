/**
 * The series of one or more families with the same label names: each series' label text (escaped once) to a
 * slot number, the label values of each slot, and how many families hold each slot. A family indexes its
 * typed arrays by these slots. Families that share an index (a daemon's per-job families, say) keep one map
 * of label texts between them instead of one each: at 10,000 series a map is about 0.46 MB.
 */
export class SeriesIndex<L extends string = string> {
  readonly labelNames: readonly L[];
  /** Label text to slot, in the order the series were first made (the order they are rendered in). */
  readonly slots: ReadonlyMap<string, number>;
  /** The map behind `slots`: only `hold` and `release` change it. */
  private readonly slotOfText = new Map<string, number>();
  private allocated = 0;
  private used = 0;
  private free: number[] = [];
  /** Families that hold each slot. */
  private holders = new Uint32Array(0);
  /** Label values of slot s at [s * labelNames.length + i], for `get()`. */
  private labelValues: string[] = [];

  constructor(labelNames: readonly L[]) {
    this.labelNames = [...labelNames];
    this.slots = this.slotOfText;
  }

  /** Slots allocated so far: a family's typed arrays hold at least the slots it was given. */
  get capacity(): number {
    return this.allocated;
  }

  /**
   * The slot of `text`, made when it does not exist yet, with one more holder. A family calls this once per
   * series it makes; `release` undoes it.
   */
  hold(text: string, labels: Readonly<Record<L, string | number>>): number {
    let slot = this.slotOfText.get(text);
    if (slot === undefined) slot = this.add(text, labels);
    this.holders[slot] = this.holders[slot]! + 1;
    return slot;
  }

  /** One holder less; a slot no family holds is forgotten and reused. */
  release(text: string, slot: number): void {
    const left = this.holders[slot]! - 1;
    this.holders[slot] = left;
    if (left > 0) return;
    this.slotOfText.delete(text);
    const n = this.labelNames.length;
    this.labelValues.fill('', slot * n, slot * n + n);
    this.free.push(slot);
  }

  /** The label values of a slot, by name. */
  labelsOf(slot: number): Record<string, string> {
    const n = this.labelNames.length;
    const labels: Record<string, string> = {};
    for (let i = 0; i < n; i++) labels[this.labelNames[i]!] = this.labelValues[slot * n + i]!;
    return labels;
  }

  private add(text: string, labels: Readonly<Record<L, string | number>>): number {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.used++;
      if (slot >= this.allocated) {
        this.allocated = Math.max(INITIAL_CAPACITY, this.allocated * 2);
        const holders = new Uint32Array(this.allocated);
        holders.set(this.holders);
        this.holders = holders;
      }
    }
    const n = this.labelNames.length;
    for (let i = 0; i < n; i++) this.labelValues[slot * n + i] = String(labels[this.labelNames[i]!]);
    this.slotOfText.set(text, slot);
    return slot;
  }
}

const INITIAL_CAPACITY = 16;
