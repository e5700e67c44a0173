/** Work per key, one at a time in call order; different keys run side by side. */
export interface SerialQueues {
  /** Runs `work` after everything queued before under `key`; settles as `work` does. */
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
  /** Resolves once everything queued so far has settled. */
  idle(): Promise<void>;
}

export function createSerialQueues(): SerialQueues {
  const tails = new Map<string, Promise<void>>();
  return {
    run(key, work) {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(work);
      // A failed piece of work does not stop the ones after it.
      const tail = result.then(
        () => {},
        () => {},
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    async idle() {
      await Promise.all(tails.values());
    },
  };
}
