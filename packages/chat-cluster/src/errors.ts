/** What one code means and what to do about it. */
export interface ChatClusterErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

/** Every failure this package reports itself carries one of these stable codes. */
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
