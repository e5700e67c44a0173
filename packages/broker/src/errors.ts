/** Every failure the broker reports carries one of these stable codes. */
export type BrokerErrorCode =
  | 'BROKER_UNREACHABLE'
  | 'BROKER_TIMEOUT'
  | 'BROKER_NO_RESPONDERS'
  | 'BROKER_DISCONNECTED'
  | 'BROKER_CLOSED'
  | 'BROKER_INVALID_SUBJECT'
  | 'BROKER_BAD_PAYLOAD'
  | 'BROKER_PAYLOAD_TOO_LARGE'
  | 'BROKER_FRAME_TOO_LARGE'
  | 'BROKER_BAD_FRAME'
  | 'BROKER_SOCKET_UNSAFE'
  | 'BROKER_SOCKET_IN_USE'
  | 'BROKER_SOCKET_PATH_INVALID'
  | 'BROKER_CONFIG_INVALID'
  | 'BROKER_ERROR';

export const BROKER_ERROR_CODES: readonly BrokerErrorCode[] = [
  'BROKER_UNREACHABLE',
  'BROKER_TIMEOUT',
  'BROKER_NO_RESPONDERS',
  'BROKER_DISCONNECTED',
  'BROKER_CLOSED',
  'BROKER_INVALID_SUBJECT',
  'BROKER_BAD_PAYLOAD',
  'BROKER_PAYLOAD_TOO_LARGE',
  'BROKER_FRAME_TOO_LARGE',
  'BROKER_BAD_FRAME',
  'BROKER_SOCKET_UNSAFE',
  'BROKER_SOCKET_IN_USE',
  'BROKER_SOCKET_PATH_INVALID',
  'BROKER_CONFIG_INVALID',
  'BROKER_ERROR',
];

export function isBrokerErrorCode(value: unknown): value is BrokerErrorCode {
  return typeof value === 'string' && (BROKER_ERROR_CODES as readonly string[]).includes(value);
}

export class BrokerError extends Error {
  override readonly name: string = 'BrokerError';
  constructor(
    readonly code: BrokerErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export function isBrokerError(err: unknown, code?: BrokerErrorCode): err is BrokerError {
  return err instanceof BrokerError && (code === undefined || err.code === code);
}
