import { sleep } from '@agent/timers';

/** Polls `check` every 25 ms until it returns a value other than undefined/false, or fails after `ms`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T> | T,
  ms = 5000,
): Promise<Exclude<T, false | undefined>> {
  const until = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as Exclude<T, false | undefined>;
    if (performance.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}
