import type { FeedItem, ParsedFeed } from './feed.js';

/**
 * Placeholders an `rss` job's `message_template` may use. `{title}` and `{link}` come from the spec; the
 * others are extras. Missing values render as an empty string (except `{title}`, which is never empty).
 */
export const RSS_PLACEHOLDERS = [
  'title',
  'link',
  'published',
  'summary',
  'author',
  'feed_title',
  'id',
] as const;

export type RssPlaceholder = (typeof RSS_PLACEHOLDERS)[number];

/**
 * The values for every {@link RSS_PLACEHOLDERS} entry, as plain strings for the template renderer:
 * `published` is ISO 8601 in UTC (`2024-05-01T12:00:00.000Z`) or empty when the item has no date.
 */
export function rssTemplateFields(
  item: FeedItem,
  feed: Pick<ParsedFeed, 'title'> | undefined,
): Record<RssPlaceholder, string> {
  const published = item.published instanceof Date && !Number.isNaN(item.published.getTime());
  return {
    title: item.title,
    link: item.link ?? '',
    published: published ? (item.published as Date).toISOString() : '',
    summary: item.summary ?? '',
    author: item.author ?? '',
    feed_title: feed?.title ?? '',
    id: item.id,
  };
}
