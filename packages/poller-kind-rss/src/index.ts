export {
  FEED_ERROR_CODES,
  parseFeed,
  parseFeedAsync,
  type ParseFeedAsyncOptions,
  SUMMARY_MAX_CHARS,
  ID_MAX_CHARS,
  type FeedItem,
  type FeedFormat,
  type ParsedFeed,
  type ParseFeedOptions,
  type ParseFeedResult,
  type FeedParseErrorCode,
} from './feed.js';
export { orderOldestFirst } from './order.js';
export { rssTemplateFields, RSS_PLACEHOLDERS, type RssPlaceholder } from './template.js';
export { parseFeedDate } from './dates.js';
export { decodeBody, type DecodedBody } from './charset.js';
export { htmlToText, decodeEntities } from './text.js';
export {
  rssPollerKind,
  rssConfigSchema,
  cursorValidators,
  sourceKeyOfUrl,
  RSS_DEFAULT_MAX_PER_TICK,
  type RssConfig,
  type RssConfig as Config,
  type RssCursor,
} from './kind.js';
export { rssPollerKind as default } from './kind.js';
