/**
 * Pending wake-ups ordered by due time, earliest first (equal times in the order they were added): a binary
 * min-heap. The scheduler keeps every job's next run here under one clock timer, where one Node timer per job
 * cost a timer object, a wrapper and, for each distinct delay, a timer list, all kept a whole interval.
 */

/** One wake-up; `seq` orders equal times. */
export interface QueuedWake<T> {
  readonly at: number;
  readonly seq: number;
  readonly item: T;
}

export class TimerQueue<T> {
  private heap: QueuedWake<T>[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.heap.length;
  }

  /** The `seq` the next push gets: entries pushed from now on have this or a higher one. */
  get nextSeqToIssue(): number {
    return this.nextSeq;
  }

  /** Adds `item` due at `at` (ms); returns its entry. */
  push(at: number, item: T): QueuedWake<T> {
    const entry: QueuedWake<T> = { at, seq: this.nextSeq++, item };
    this.heap.push(entry);
    this.up(this.heap.length - 1);
    return entry;
  }

  /** The earliest entry, left in place. */
  peek(): QueuedWake<T> | undefined {
    return this.heap[0];
  }

  /** Removes and returns the earliest entry. */
  pop(): QueuedWake<T> | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top !== undefined && heap.length > 0) {
      heap[0] = last!;
      this.down(0);
    }
    return top;
  }

  /** Keeps only the entries `keep` accepts (linear: a rebuild, for dropping many stale entries at once). */
  retain(keep: (entry: QueuedWake<T>) => boolean): void {
    this.heap = this.heap.filter(keep);
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  private up(i: number): void {
    const heap = this.heap;
    const entry = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(entry, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  private down(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const entry = heap[i]!;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap[child + 1]!, heap[child]!)) child++;
      if (!before(heap[child]!, entry)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = entry;
  }
}

function before<T>(a: QueuedWake<T>, b: QueuedWake<T>): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
