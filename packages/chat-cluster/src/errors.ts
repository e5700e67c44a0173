/** What one code means and what to do about it. */
export interface ChatClusterErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

/** Every failure this package reports itself (owners, channel state, the inbound stream) carries one of these stable codes. */
export const CHAT_CLUSTER_ERROR_CODES = {
  CHAT_STATE_FENCED: {
    meaning:
      'A channel state write (e.g. a `chat_b` offset) came from a daemon that no longer owns the instance: its owner term ended or another daemon took over. The stored value is unchanged. Logged by the channel (`channel offset not persisted`) around an owner change.',
    action:
      'Nothing when it follows `channel owner lost`: the new owner resumes from the stored value (an update may come twice). If it repeats while one daemon runs the instance, check that clocks and the database are healthy (`agent cluster status`).',
  },
  CHAT_OWNER_DUPLICATE: {
    meaning:
      'An instance was given to the inbound owners a second time while its first ownership was not released: two owners in one daemon would start its inbound side twice.',
    action: 'Report it: the runtime releases an ownership before it asks for the same instance again.',
  },
  CHAT_STREAM_BAD_OPTIONS: {
    meaning:
      'The chat inbound was started with a subject prefix that is not dot-separated tokens of letters, digits, `_` and `-`, or with a partition count, lease TTL or ack wait out of range.',
    action: 'Fix `subject_prefix` in `broker.yaml`; report it when the prefix there is valid.',
  },
  CHAT_STREAM_UNREACHABLE: {
    meaning:
      'The NATS server refused the chat inbound connection at start, or answers without JetStream enabled.',
    action:
      'Start the NATS server with JetStream (`-js`), or fix `url` in `broker.yaml`; the daemon retries at its next start.',
  },
  CHAT_STREAM_CONFLICT: {
    meaning:
      'The inbound stream exists with settings that cannot be changed to ours (e.g. its storage type), or JetStream refused to create it (out of storage).',
    action:
      'Inspect it with `nats stream info <name>`; delete it when no unhandled chat message is left in it, or free storage, then restart the daemon.',
  },
  CHAT_STREAM_UNAVAILABLE: {
    meaning:
      'A chat message could not be stored: the NATS connection is down or JetStream did not confirm in time. The channel does not confirm it upstream (the vendor retries, `chat_b` keeps its offset).',
    action:
      'Check the NATS server and the network to it; messages come again once it is back. The log says once per outage.',
  },
  CHAT_STREAM_STOPPED: {
    meaning: 'A chat message was handed to the chat inbound after `stop()`.',
    action: 'Report it: the daemon stops its channels before the chat inbound.',
  },
} as const satisfies Record<string, ChatClusterErrorInfo>;

export type ChatClusterErrorCode = keyof typeof CHAT_CLUSTER_ERROR_CODES;

export class ChatClusterError extends Error {
  override readonly name = 'ChatClusterError';
  constructor(
    readonly code: ChatClusterErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${message} [${code}]`, options);
  }
}
