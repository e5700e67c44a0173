/** Stable error codes of this package; match on `code`, never on message text. */
export type ChannelErrorCode =
  | 'CHANNEL_SEND_FAILED'
  | 'CHANNEL_CONFIG_INVALID'
  | 'CHANNEL_MESSAGE_INVALID'
  | 'CHANNEL_LISTEN_FAILED'
  | 'CHANNEL_STATE_CORRUPT'
  | 'CHANNEL_STATE_WRITE_FAILED';

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
