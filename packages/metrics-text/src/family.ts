/**
 * What the three metric families share: each series is a slot in typed arrays of numbers, found by its
 * label text (`kind="rss",agent="a",job_id="x"`), escaped once when the series is made. Rendering writes
 * that text into lines; no object is allocated per series or per bucket.
 */
import type { Registry } from 'prom-client';
import { SeriesIndex } from './series-index.js';
import { checkNames, escapeLabelValue, headerOf, type MetricKind } from './text.js';

/** A series' label values by label name: every label of the family, no other. */
export type LabelValues<L extends string> = Readonly<Record<L, string | number>>;

export interface FamilyOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  /** Registries the family registers in (none by default: unlike prom-client, never the global one). */
  registers?: readonly Registry[];
  /**
   * The series index the family shares with others of the same label names (one of its own by default). A
   * series removed from one family and made again keeps its place while another family holds it.
   */
  series?: SeriesIndex<L>;
}

/** One sample of `get()`, in prom-client's shape. */
export interface SampleValue {
  value: number;
  labels: Record<string, string | number>;
  /** Set on histogram samples: `<name>_bucket`, `<name>_sum`, `<name>_count`. */
  metricName?: string;
}

/** What `get()` answers, in prom-client's shape (`MetricObjectWithValues`). */
export interface FamilySnapshot {
  name: string;
  help: string;
  type: MetricKind;
  values: SampleValue[];
  aggregator: 'sum';
}

/** A metric that writes its own exposition text; the renderers use it instead of prom-client's. */
export interface RendersText {
  readonly name: string;
  /** The family's HELP and TYPE lines and its samples, one per line, without a trailing newline. */
  renderText(): string;
  /**
   * What `renderText` answers, in pieces (the header, then one piece per series), made as they are asked
   * for: a family of 10,000 series is never one string.
   */
  textPieces(): Iterable<string>;
}

/**
 * Label text by frozen label object, per list of label names. A caller that passes the same frozen object
 * at every update (a job's labels) builds its text once, and families with the same label names share that
 * one string. Only frozen objects: a mutable one could change between calls.
 */
const labelTexts = new Map<string, WeakMap<object, string>>();

function labelTextCache(names: readonly string[]): WeakMap<object, string> {
  const signature = names.join(',');
  let cache = labelTexts.get(signature);
  if (!cache) labelTexts.set(signature, (cache = new WeakMap()));
  return cache;
}

export abstract class LabelledFamily<L extends string> implements RendersText {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly type: MetricKind;
  readonly aggregator = 'sum' as const;
  protected readonly header: string;
  /** Label text of each series to its slot, in insertion order (the order prom-client renders). */
  private readonly series: SeriesIndex<L>;
  /** 1 at the slots of the index that are series of this family. */
  private held = new Uint8Array(0);
  /** Slots the typed arrays of a subclass (and `held`) have room for. */
  protected capacity = 0;
  /** `kind="`, `,agent="`, ...: the text before each label value. */
  private readonly opens: string[];
  private readonly texts: WeakMap<object, string>;

  protected constructor(options: FamilyOptions<L>, type: MetricKind) {
    checkNames(options.name, options.help, options.labelNames);
    this.name = options.name;
    this.help = options.help;
    this.labelNames = [...options.labelNames];
    this.type = type;
    this.header = headerOf(this.name, this.help, type);
    this.opens = this.labelNames.map((label, i) => `${i ? ',' : ''}${label}="`);
    this.texts = labelTextCache(this.labelNames);
    const series = options.series ?? new SeriesIndex(this.labelNames);
    if (series.labelNames.join(',') !== this.labelNames.join(',')) {
      throw new TypeError(
        `metric ${this.name}: its series index is for labels ${series.labelNames.join(', ') || '(none)'}`,
      );
    }
    this.series = series;
  }

  /** Registers the family, once a subclass is whole (a family that failed its checks is not registered). */
  protected registerIn(registers: readonly Registry[] = []): void {
    // prom-client's registerMetric is typed for its own classes; a registry reads only name, get() and
    // reset() (and the renderers read textPieces()).
    for (const registry of registers) registry.registerMetric(this as never);
  }

  /** Deletes one series; a series that does not exist is no error. */
  remove(labels: LabelValues<L>): void {
    const text = this.textOf(labels);
    const slot = this.series.slots.get(text);
    if (slot === undefined || !this.holds(slot)) return;
    this.held[slot] = 0;
    this.clearSlot(slot);
    this.series.release(text, slot);
  }

  /** Deletes every series (an unlabelled family keeps its one series, at zero), as prom-client's reset. */
  reset(): void {
    // Deleting from a Map while iterating it is safe: the entries after it still come.
    for (const [text, slot] of this.series.slots) if (this.holds(slot)) this.series.release(text, slot);
    this.held = new Uint8Array(0);
    this.capacity = 0;
    this.resize(0);
    if (this.labelNames.length === 0) this.slotFor({} as LabelValues<L>);
  }

  /** The series and their samples in prom-client's shape: `registry.getMetricsAsJSON()` and tests read it. */
  async get(): Promise<FamilySnapshot> {
    const values: SampleValue[] = [];
    for (const slot of this.series.slots.values())
      if (this.holds(slot)) this.samplesOf(slot, this.series.labelsOf(slot), values);
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  renderText(): string {
    return [...this.textPieces()].join('');
  }

  *textPieces(): Generator<string, void, undefined> {
    yield this.header;
    // The series of this moment, each rendered when its turn comes: between two pieces the caller may let
    // other work run, and a series removed and made again meanwhile would come back at the end of the Map
    // (twice in one scrape). Series removed meanwhile are left out; series made meanwhile wait for the next.
    const texts = [...this.series.slots.keys()];
    for (const text of texts) {
      const slot = this.series.slots.get(text);
      if (slot !== undefined && this.holds(slot)) yield this.renderSeries(text, slot);
    }
  }

  /**
   * The slot of a series, made (at zero) when it does not exist yet. Making one may replace the typed
   * arrays (they grow by doubling and never shrink): read them after this call, not before.
   */
  protected slotFor(labels: LabelValues<L>): number {
    const text = this.textOf(labels);
    const slot = this.series.slots.get(text);
    return slot !== undefined && this.holds(slot) ? slot : this.add(text, labels);
  }

  /** The typed arrays of a subclass, grown (or, at 0, emptied) to `capacity` slots, values kept. */
  protected abstract resize(capacity: number): void;
  /** Zeroes the numbers of a slot, before it is reused. */
  protected abstract clearSlot(slot: number): void;
  /** The sample lines of one series, each after a newline; `text` is its label text ('' without labels). */
  protected abstract renderSeries(text: string, slot: number): string;
  /** Appends the samples of one series for `get()`. */
  protected abstract samplesOf(slot: number, labels: Record<string, string>, into: SampleValue[]): void;

  private textOf(labels: LabelValues<L>): string {
    if (!Object.isFrozen(labels)) return this.buildText(labels);
    let text = this.texts.get(labels);
    if (text === undefined) this.texts.set(labels, (text = this.buildText(labels)));
    return text;
  }

  private buildText(labels: LabelValues<L>): string {
    const names = this.labelNames;
    // Joined, not concatenated: the text is kept as the series' key, and a string built with `+=` is kept
    // as a tree of its pieces instead of one string.
    const parts: string[] = [];
    let given = 0;
    for (const _ in labels) given++;
    for (let i = 0; i < names.length; i++) {
      const value = labels[names[i]!];
      if (value === undefined) throw new TypeError(`metric ${this.name}: label "${names[i]}" is missing`);
      parts.push(this.opens[i]!, escapeLabelValue(typeof value === 'string' ? value : String(value)), '"');
    }
    if (given !== names.length) {
      throw new TypeError(`metric ${this.name}: labels other than ${names.join(', ') || '(none)'} given`);
    }
    return parts.join('');
  }

  private holds(slot: number): boolean {
    return this.held[slot] === 1;
  }

  /** Makes a series of this family: a slot of the index (its own, or another family's series). */
  private add(text: string, labels: LabelValues<L>): number {
    const slot = this.series.hold(text, labels);
    if (slot >= this.capacity) {
      // As large as the index: its slots grow by doubling, and so do the arrays (values kept).
      this.capacity = this.series.capacity;
      this.resize(this.capacity);
      const held = new Uint8Array(this.capacity);
      held.set(this.held);
      this.held = held;
    }
    this.held[slot] = 1;
    return slot;
  }
}

/** A copy of `from` with room for `length` numbers (an empty array at 0). */
export function grown(from: Float64Array, length: number): Float64Array<ArrayBuffer> {
  const to = new Float64Array(length);
  if (length > 0) to.set(from.subarray(0, Math.min(from.length, length)));
  return to;
}
