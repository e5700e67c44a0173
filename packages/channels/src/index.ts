/**
 * `@agent/channels`: the channel plugin contract and the built-in channels `chat_a` (WhatsApp
 * Cloud API), `chat_b` (Telegram Bot API) and `log`.
 */
import type { ChannelPlugin } from './contract.js';
import { chatAChannel } from './chat-a.js';
import { chatBChannel } from './chat-b.js';
import { logChannel } from './log-channel.js';

export type {
  ChannelDeps,
  ChannelInstance,
  ChannelPlugin,
  InboundMessage,
  JsonSchema,
  KeyValueStore,
  OutboundMessage,
  SendResult,
} from './contract.js';
export {
  CHANNEL_ERROR_CODES,
  ChannelError,
  ChannelSendError,
  isRetryableStatus,
  type ChannelErrorCode,
  type ChannelErrorInfo,
} from './errors.js';
export { createFileKeyValueStore, createMemoryKeyValueStore } from './kv-store.js';
export { MAX_MESSAGE_LENGTH, splitText } from './split-text.js';
export {
  CHAT_A_DEFAULTS,
  chatAChannel,
  chatAInstanceSchema,
  MAX_WEBHOOK_BODY_BYTES,
  parseListenAddress,
  signWebhookBody,
  type ChatAConfig,
  type ChatAInstance,
  type ListenAddress,
} from './chat-a.js';
export {
  CHAT_B_DEFAULTS,
  CHAT_B_MAX_POLL_BACKOFF_MS,
  CHAT_B_MAX_RETRY_AFTER_SECS,
  CHAT_B_MAX_SEND_ATTEMPTS,
  chatBChannel,
  chatBInstanceSchema,
  chatBOffsetKey,
  type ChatBConfig,
  type ChatBInstance,
} from './chat-b.js';
export {
  logChannel,
  logInstanceSchema,
  type LogChannelConfig,
  type LogChannelInstance,
  type LogDeliveryRecord,
} from './log-channel.js';

/** The channels that ship with the daemon, in registration order. */
export const builtinChannels: readonly ChannelPlugin[] = Object.freeze([
  chatAChannel,
  chatBChannel,
  logChannel,
]);
