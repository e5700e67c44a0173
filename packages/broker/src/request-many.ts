/** Gathering several answers to one request, with the same stop rules for every broker kind. */
import { setTimer, type TimerHandle } from '@agent/timers';
import { isBrokerError } from './errors.js';
import type { RequestManyOptions } from './types.js';

/**
 * Reads answers from `source` (a NATS answer stream whose `stop()` ends it) until the stream ends, or
 * `maxMessages`, `stallMs` or `until` says enough. Answers that do not decode are skipped.
 */
export async function gatherMany<M>(
  source: AsyncIterable<M> & { stop?(): void },
  opts: RequestManyOptions,
  decode: (msg: M) => unknown,
): Promise<unknown[]> {
  const answers: unknown[] = [];
  let stall: TimerHandle | undefined;
  const onAbort = (): void => source.stop?.();
  if (opts.signal?.aborted) return answers;
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const msg of source) {
      let value: unknown;
      try {
        value = decode(msg);
      } catch {
        continue;
      }
      answers.push(value);
      if (enough(answers, opts)) {
        source.stop?.();
        break;
      }
      if (opts.stallMs !== undefined) {
        stall?.cancel();
        stall = setTimer(() => source.stop?.(), opts.stallMs);
      }
    }
  } finally {
    stall?.cancel();
    opts.signal?.removeEventListener('abort', onAbort);
  }
  return answers;
}

function enough(answers: readonly unknown[], opts: RequestManyOptions): boolean {
  if (opts.maxMessages !== undefined && answers.length >= opts.maxMessages) return true;
  return opts.until?.(answers) ?? false;
}

/**
 * `requestMany` of the local kinds: one receiver per subject, so the first answer is the only one; no
 * answer within `maxWaitMs` is an empty list, like a NATS wait that heard nobody.
 */
export async function singleAnswer(
  request: (timeoutMs: number) => Promise<unknown>,
  opts: RequestManyOptions,
): Promise<unknown[]> {
  const signal = opts.signal;
  if (signal?.aborted) return [];
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<unknown[]>((resolve) => {
    onAbort = () => resolve([]);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  const answered = request(opts.maxWaitMs).then(
    (answer) => [answer],
    (err: unknown) => {
      if (isBrokerError(err, 'BROKER_TIMEOUT')) return [];
      throw err;
    },
  );
  try {
    return await Promise.race([answered, aborted]);
  } finally {
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
