/** @agent/poller-kind-rss — the `rss` poller kind: RSS / Atom / JSON Feed with conditional GET. */
export { rssConfigSchema, rssPollerKind, type RssConfig, type RssCursor } from './kind.js';
