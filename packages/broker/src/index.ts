export type {
  Broker,
  BrokerMessage,
  MessageHandler,
  PublishOptions,
  RequestManyOptions,
  RequestOptions,
  Subscription,
} from './types.js';
export { DEFAULT_REQUEST_TIMEOUT_MS } from './types.js';
export {
  BrokerError,
  BROKER_ERROR_CODES,
  isBrokerError,
  isBrokerErrorCode,
  type BrokerErrorCode,
  type BrokerErrorInfo,
} from './errors.js';
export { defaultSocketPath, resolveBrokerConfig, DEFAULT_SOCKET_FILE } from './config.js';
export type { BrokerConfig, BrokerConfigFile } from './config.js';
export { createBroker, connectBroker, type BrokerFactoryOptions } from './factory.js';
export { createLocalBroker, type LocalBroker, type LocalBrokerOptions } from './local.js';
export { connectLocalBroker, type ConnectLocalBrokerOptions } from './socket-client.js';
export { createNatsBroker, redactUrl, type NatsBrokerOptions } from './nats-options.js';
export {
  gatherAcks,
  requestWithAck,
  type GatherAcksOptions,
  type GatheredAcks,
  type RequestWithAckOptions,
} from './ack.js';
export { MAX_PAYLOAD_BYTES } from './payload.js';
export { MAX_FRAME_BYTES } from './framing.js';
export { MAX_SUBJECT_LENGTH } from './subject.js';
export { MAX_SUBJECT_PREFIX_LENGTH, withSubjectPrefix } from './subject-prefix.js';
export { MAX_SOCKET_PATH_BYTES } from './socket-path.js';
