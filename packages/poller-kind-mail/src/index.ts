/** @agent/poller-kind-mail — the `mail` poller kind (mailbox search, extraction, mark-read) and `mail_count_unread`. */
export {
  COUNT_MAX_IDS,
  createMailShared,
  FETCH_CONCURRENCY,
  MAIL_API_BASE_URL,
  mailAccountSchema,
  mailPollerKind,
  MESSAGE_CACHE_SIZE,
  SKIPPED_LABELS,
  tickQuery,
  type MailShared,
} from './kind.js';
export {
  MAIL_DEFAULTS,
  MAIL_PLACEHOLDERS,
  mailConfigProblems,
  mailConfigSchema,
  type MailConfig,
} from './config.js';
export {
  createMailApi,
  LIST_MAX_IDS,
  LIST_PAGE_SIZE,
  MARK_READ_TIMEOUT_MS,
  toPollerError,
  type ListResult,
  type MailApi,
} from './api.js';
export { BODY_MAX_CHARS, parseMessage, type MailMessage } from './message.js';
export { normalizeAllowlistPattern, senderAddress, senderAllowed } from './sender.js';
export {
  compilePattern,
  EXTRACT_INPUT_MAX_CHARS,
  EXTRACT_TIMEOUT_MS,
  extractOne,
  extractProblems,
  type ExtractResult,
} from './extract.js';
export {
  charsetOf,
  decodeBase64Url,
  decodeCharset,
  decodeEntities,
  decodeHeaderWords,
  decodeQuotedPrintable,
  htmlToText,
} from './text.js';
export { mailLegacyJobSource } from './legacy.js';
