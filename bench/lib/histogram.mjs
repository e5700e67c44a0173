// Prometheus histograms from a scrape: cumulative bucket counts, differences between two scrapes, sums
// over daemons, and quantiles interpolated inside a bucket as PromQL's `histogram_quantile` does.

/** `{ bounds: [le...], counts: [cumulative...], sum, count }` of an unlabelled histogram (or all series added). */
export function histogramOf(text, name) {
  const byLe = new Map();
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith(`${name}_bucket{`)) {
      const le = /le="([^"]+)"/.exec(line)[1];
      const bound = le === '+Inf' ? Infinity : Number(le);
      byLe.set(bound, (byLe.get(bound) ?? 0) + value);
    } else if (line.startsWith(`${name}_sum`)) sum += value;
    else if (line.startsWith(`${name}_count`)) count += value;
  }
  const bounds = [...byLe.keys()].sort((a, b) => a - b);
  return { bounds, counts: bounds.map((b) => byLe.get(b)), sum, count };
}

/** `later` minus `earlier` (the same buckets): what was observed between two scrapes. */
export const histogramDiff = (later, earlier) => ({
  bounds: later.bounds,
  counts: later.counts.map((c, i) => c - (earlier.counts[i] ?? 0)),
  sum: later.sum - earlier.sum,
  count: later.count - earlier.count,
});

/** Histograms of the same buckets added (several daemons). */
export const histogramAdd = (hs) => ({
  bounds: hs[0].bounds,
  counts: hs[0].counts.map((_, i) => hs.reduce((s, h) => s + (h.counts[i] ?? 0), 0)),
  sum: hs.reduce((s, h) => s + h.sum, 0),
  count: hs.reduce((s, h) => s + h.count, 0),
});

/**
 * The q-quantile, linear inside its bucket; `Infinity` when it lies beyond the last finite bound, NaN
 * without observations.
 */
export function quantile(h, q) {
  if (!h.count) return NaN;
  const rank = q * h.count;
  for (let i = 0; i < h.bounds.length; i++) {
    if (h.counts[i] < rank) continue;
    if (h.bounds[i] === Infinity) return Infinity;
    const lower = i === 0 ? 0 : h.bounds[i - 1];
    const below = i === 0 ? 0 : h.counts[i - 1];
    const inBucket = h.counts[i] - below;
    return inBucket ? lower + ((h.bounds[i] - lower) * (rank - below)) / inBucket : h.bounds[i];
  }
  return Infinity;
}

/** The bucket `[lower, upper]` the q-quantile lies in: the resolution of `quantile`. */
export function quantileBucket(h, q) {
  const rank = q * h.count;
  const i = h.counts.findIndex((c) => c >= rank);
  return [i <= 0 ? 0 : h.bounds[i - 1], h.bounds[i]];
}
