import { BrokerError } from './errors.js';

/** Largest encoded payload (JSON, UTF-8) a message may carry; equals NATS's default `max_payload`. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** Encodes `data` as JSON text; `undefined` travels as `null`. */
export function encodePayload(data: unknown, maxBytes = MAX_PAYLOAD_BYTES): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(data === undefined ? null : data);
  } catch (err) {
    throw new BrokerError(
      'BROKER_BAD_PAYLOAD',
      `broker payload is not JSON-serialisable (${(err as Error).message}); send plain objects, arrays, strings, numbers, booleans or null`,
      { cause: err },
    );
  }
  // JSON.stringify returns undefined for functions and symbols at the top level.
  if (text === undefined) {
    throw new BrokerError(
      'BROKER_BAD_PAYLOAD',
      'broker payload is not JSON-serialisable; send plain objects, arrays, strings, numbers, booleans or null',
    );
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new BrokerError(
      'BROKER_PAYLOAD_TOO_LARGE',
      `broker payload is ${bytes} bytes, above the limit of ${maxBytes}; send a reference (id, path) instead of the data`,
    );
  }
  return text;
}

/** Decodes JSON text; an empty body is `null`. Throws BROKER_BAD_PAYLOAD on anything else. */
export function decodePayload(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new BrokerError('BROKER_BAD_PAYLOAD', 'broker message body is not valid JSON', { cause: err });
  }
}
