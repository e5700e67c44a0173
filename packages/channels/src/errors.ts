/** What one code means and what to do about it. */
export interface ChannelErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

/** Stable error codes of this package; match on `code`, never on message text. */
export const CHANNEL_ERROR_CODES = {
  CHANNEL_SEND_FAILED: {
    meaning:
      'The vendor refused a send or could not be reached. `status` is the HTTP status (absent for network errors); `retryable` is true for 408, 429, 5xx and network failures; `sentIds` lists parts of a split text already delivered.',
    action: 'Retry later when `retryable`; otherwise fix the recipient or credentials named in the message.',
  },
  CHANNEL_CONFIG_INVALID: {
    meaning:
      'An instance block is missing a field, has an unknown field or a malformed value (the message names the field, never the value).',
    action: 'Fix `config/plugins/<plugin>.yaml`.',
  },
  CHANNEL_MESSAGE_INVALID: {
    meaning: '`send` got an empty `to` or a blank `text`.',
    action: 'Send a recipient and a non-blank text.',
  },
  CHANNEL_LISTEN_FAILED: {
    meaning: 'The `chat_a` webhook listener could not bind `listen`.',
    action: 'Choose a free address or stop what holds it.',
  },
  CHANNEL_STATE_CORRUPT: {
    meaning: 'The state file is not a JSON object of strings, or a stored `chat_b` offset is not an integer.',
    action: 'Repair or delete the file / key (deleting lets the vendor re-deliver updates it still holds).',
  },
  CHANNEL_STATE_WRITE_FAILED: {
    meaning: 'The state file could not be written.',
    action: 'Make its directory writable; the previous value stays in effect.',
  },
} as const satisfies Record<string, ChannelErrorInfo>;

export type ChannelErrorCode = keyof typeof CHANNEL_ERROR_CODES;

export class ChannelError extends Error {
  readonly code: ChannelErrorCode;
  constructor(code: ChannelErrorCode, message: string) {
    super(message);
    this.name = 'ChannelError';
    this.code = code;
  }
}

export interface ChannelSendErrorDetails {
  /** HTTP status of the vendor's answer; absent for network failures and timeouts. */
  status?: number;
  /** True when sending the same message again later may succeed (429, 5xx, network). */
  retryable: boolean;
  /** Ids of the parts of a split text that were delivered before the failure. */
  sentIds?: string[];
}

/** A send the vendor refused or that never reached it. */
export class ChannelSendError extends ChannelError {
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly sentIds: string[];
  constructor(message: string, details: ChannelSendErrorDetails) {
    super('CHANNEL_SEND_FAILED', message);
    this.name = 'ChannelSendError';
    this.status = details.status;
    this.retryable = details.retryable;
    this.sentIds = details.sentIds ?? [];
  }
}

/** True for statuses worth retrying later: rate limits and server-side failures. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
