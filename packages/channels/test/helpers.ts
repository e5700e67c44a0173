import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InboundMessage } from '../src/contract.js';

export interface InboundCollector {
  /** Messages the handler accepted (its promise resolved). */
  readonly accepted: InboundMessage[];
  /** Every call, accepted or not. */
  readonly calls: InboundMessage[];
  onInbound(msg: InboundMessage): Promise<void>;
  /** Resolves once `n` messages were accepted; rejects after `timeoutMs`. */
  waitForAccepted(n: number, timeoutMs?: number): Promise<void>;
}

/** An `onInbound` that records messages; `behaviour` may throw to refuse the n-th call (1-based). */
export function createInboundCollector(
  behaviour?: (msg: InboundMessage, call: number) => void | Promise<void>,
): InboundCollector {
  const accepted: InboundMessage[] = [];
  const calls: InboundMessage[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  return {
    accepted,
    calls,
    async onInbound(msg) {
      calls.push(msg);
      await behaviour?.(msg, calls.length);
      accepted.push(msg);
      const ready = waiters.filter((w) => accepted.length >= w.n);
      for (const w of ready) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    waitForAccepted(n, timeoutMs = 5000) {
      if (accepted.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`only ${accepted.length} of ${n} messages accepted`)),
          timeoutMs,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
  };
}

/** Polls `condition` every few milliseconds until it holds; rejects after `timeoutMs`. */
export async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A `sleep` that returns at once and records what it was asked to wait. */
export function createRecordingSleep(): {
  sleeps: number[];
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
} {
  const sleeps: number[] = [];
  return {
    sleeps,
    sleep: async (ms, signal) => {
      sleeps.push(ms);
      if (signal?.aborted) throw signal.reason;
    },
  };
}

/** A loopback base URL nothing listens on. */
export async function unusedBaseUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}
