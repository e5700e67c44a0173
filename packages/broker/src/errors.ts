/** What one code means and what to do about it. */
export interface BrokerErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

/** Every failure the broker reports carries one of these stable codes. */
export const BROKER_ERROR_CODES = {
  BROKER_UNREACHABLE: {
    meaning:
      'No daemon listens on the socket (missing, stale, permission denied), or the NATS server refused the first connection. Reported at once.',
    action:
      "Start the daemon / NATS server; check `data_dir`, `socket_path`, `url`; run as the daemon's user.",
  },
  BROKER_TIMEOUT: {
    meaning: 'Connected, but no answer within `timeoutMs`.',
    action: 'The daemon runs but is stuck or slow: check its logs.',
  },
  BROKER_NO_RESPONDERS: {
    meaning: 'Nobody is subscribed to the request subject. Reported at once.',
    action: 'Start the daemon (or the service answering that subject).',
  },
  BROKER_DISCONNECTED: {
    meaning: 'The daemon closed the socket connection (request in flight or later call).',
    action: 'Check the daemon is still running; connect again.',
  },
  BROKER_CLOSED: {
    meaning: 'The broker was closed by this process (pending requests fail with it too).',
    action: 'Create or connect a new broker.',
  },
  BROKER_INVALID_SUBJECT: {
    meaning:
      'A subject has an empty token, whitespace, a misplaced or published wildcard, or more than 512 characters.',
    action: 'Fix the subject.',
  },
  BROKER_BAD_PAYLOAD: {
    meaning: 'Data cannot be JSON-encoded (BigInt, cycle, function), or received text is not JSON.',
    action: 'Send plain JSON values.',
  },
  BROKER_PAYLOAD_TOO_LARGE: {
    meaning: "An encoded payload is larger than 1 MiB (or the NATS server's `max_payload`).",
    action: 'Send a reference (id, path) instead.',
  },
  BROKER_FRAME_TOO_LARGE: {
    meaning: 'A socket frame is larger than `MAX_FRAME_BYTES` (answered with an `err` frame).',
    action: 'Keep payloads within the limit.',
  },
  BROKER_BAD_FRAME: {
    meaning: 'A socket frame is not a JSON object with a known `op` and valid ids.',
    action: 'Follow the socket frame protocol of the broker README.',
  },
  BROKER_SOCKET_UNSAFE: {
    meaning:
      "The socket directory is writable by others, a symlink, or owned by another user; or the path holds a non-socket or someone else's socket.",
    action: '`chmod go-w` the directory or pick a private one; move the file away.',
  },
  BROKER_SOCKET_IN_USE: {
    meaning: 'Another daemon serves the socket.',
    action: 'Stop it, or use another data dir.',
  },
  BROKER_SOCKET_PATH_INVALID: {
    meaning: 'The socket path is relative or longer than 107 bytes.',
    action: 'Use a shorter absolute path (`socket_path`).',
  },
  BROKER_CONFIG_INVALID: {
    meaning:
      '`broker.yaml` is invalid (unknown field, bad kind, `nats` without `url`), or a local client has no socket path.',
    action: 'Fix `broker.yaml`; resolve it with `resolveBrokerConfig`.',
  },
  BROKER_ERROR: {
    meaning: 'Any other failure of the NATS client (the message says which).',
    action: 'Read the message.',
  },
} as const satisfies Record<string, BrokerErrorInfo>;

export type BrokerErrorCode = keyof typeof BROKER_ERROR_CODES;

export function isBrokerErrorCode(value: unknown): value is BrokerErrorCode {
  return typeof value === 'string' && Object.hasOwn(BROKER_ERROR_CODES, value);
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
