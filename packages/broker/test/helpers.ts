import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrokerMessage } from '../src/index.js';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** Subjects are unique per test: the NATS server is shared. */
export function uniqueSubject(prefix: string): string {
  return `${prefix}.${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** A fresh private (0700) directory; short, so socket paths stay under the system limit. */
export async function privateDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'brk-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Collects messages; `next(n)` waits until `n` have arrived in total. */
export function collector(): {
  messages: BrokerMessage[];
  handler: (msg: BrokerMessage) => void;
  next(count: number, timeoutMs?: number): Promise<BrokerMessage[]>;
} {
  const messages: BrokerMessage[] = [];
  const waiters: Array<() => void> = [];
  return {
    messages,
    handler: (msg) => {
      messages.push(msg);
      for (const w of waiters.splice(0)) w();
    },
    next(count, timeoutMs = 3000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(new Error(`expected ${count} messages, got ${messages.length} within ${timeoutMs} ms`)),
          timeoutMs,
        );
        const check = (): void => {
          if (messages.length >= count) {
            clearTimeout(timer);
            resolve(messages.slice(0, count));
          } else waiters.push(check);
        };
        check();
      });
    },
  };
}

/** Captures a rejection so its `code` can be asserted. */
export async function rejectionOf(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error('expected the promise to reject, but it resolved');
}

export function syncErrorOf(fn: () => unknown): { code?: string; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error('expected the call to throw, but it returned');
}
