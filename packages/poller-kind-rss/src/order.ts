import type { FeedItem } from './feed.js';

/**
 * Dispatch order, oldest first. Feeds usually list the newest item first, so the feed order is reversed
 * first; then the items that have a `published` date are sorted by it (ties keep the reversed feed order)
 * and put back into the positions dated items held, while undated items stay where the reversal put them.
 * So: all dated → pure date order; all undated → reversed feed order; mixed → undated items keep their
 * place relative to their neighbours. Stable, and the input array is not modified.
 */
export function orderOldestFirst<T extends Pick<FeedItem, 'published'>>(items: readonly T[]): T[] {
  const reversed = items.toReversed();
  const datedSlots: number[] = [];
  const dated: { item: T; time: number; rank: number }[] = [];
  reversed.forEach((item, index) => {
    const time = item.published instanceof Date ? item.published.getTime() : Number.NaN;
    if (!Number.isNaN(time)) {
      datedSlots.push(index);
      dated.push({ item, time, rank: dated.length });
    }
  });
  dated.sort((a, b) => a.time - b.time || a.rank - b.rank);
  const result = reversed;
  datedSlots.forEach((slot, index) => {
    result[slot] = (dated[index] as { item: T }).item;
  });
  return result;
}
