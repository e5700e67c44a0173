export {
  parsePath,
  getAtPath,
  itemId,
  resolveItemId,
  webhookFieldLookup,
  renderFieldValue,
  selectItems,
  ITEM_ID_MAX_CHARS,
  WEBHOOK_ERROR_CODES,
  type ParsePathResult,
  type GetAtPathResult,
  type ResolveItemIdResult,
  type ItemIdProblem,
  type WebhookItemsErrorCode,
  type SelectItemsResult,
  type SelectedItem,
  type SkippedItem,
} from './items.js';
export {
  webhookPollerKind,
  webhookConfigSchema,
  webhookSourceKey,
  WEBHOOK_DEFAULT_MAX_PER_TICK,
  type WebhookConfig,
  type WebhookConfig as Config,
} from './kind.js';
export { webhookPollerKind as default } from './kind.js';
