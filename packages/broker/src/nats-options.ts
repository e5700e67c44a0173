import type { Logger } from '@agent/log';
import type { Broker } from './types.js';

export interface NatsBrokerOptions {
  /** e.g. `nats://127.0.0.1:4222`; several servers may be given comma-separated. */
  url: string;
  /** Client name shown by the server's monitoring pages. */
  name?: string;
  logger?: Logger;
  /** Upper bound for the first connection; 2000 ms when omitted. */
  connectTimeoutMs?: number;
}

/** A URL with its user info replaced, for logs and errors. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/g, '//[redacted]@');
}

/** NATS connection; the client library is loaded only when a NATS broker is used. */
export async function createNatsBroker(opts: NatsBrokerOptions): Promise<Broker> {
  const { connectNats } = await import('./nats.js');
  return connectNats(opts);
}
