/**
 * @agent/chat-cluster — chat agents across several daemons: one owner per single-consumer channel instance
 * (a fenced lease), channel state in PostgreSQL written with the owner's fence, and inbound messages through
 * a NATS JetStream stream partitioned by chat, one consumer per partition.
 */
export {
  CHAT_CLUSTER_ERROR_CODES,
  ChatClusterError,
  type ChatClusterErrorCode,
  type ChatClusterErrorInfo,
} from './errors.js';
export { migrateChatCluster } from './migrations.js';
export {
  createInboundOwners,
  DEFAULT_OWNER_TTL_MS,
  ownerResource,
  type InboundOwners,
  type InboundOwnersOptions,
} from './owners.js';
export { createChannelStateStore, type ChannelStateOptions, type OwnerFence } from './channel-state.js';
export {
  DEFAULT_INBOUND_PARTITIONS,
  DEFAULT_STREAM_MAX_AGE_MS,
  DEFAULT_STREAM_MAX_BYTES,
  inboundNames,
  type InboundNames,
  type StreamLimits,
} from './stream.js';
export {
  DEFAULT_INBOUND_ACK_WAIT_MS,
  DEFAULT_INBOUND_LEASE_TTL_MS,
  startChatInbound,
  type ChatInbound,
  type ChatInboundOptions,
} from './stream-inbound.js';
export type { InboundHandler } from './consumer.js';
