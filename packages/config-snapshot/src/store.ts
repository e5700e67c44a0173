/** Holds the current snapshot; `swap` replaces it atomically (one pointer) and tells subscribers. */
import type { CONFIG_ERROR_CODES } from './issues.js';
import type { ConfigSnapshot } from './snapshot.js';

export interface SnapshotStore {
  current(): ConfigSnapshot;
  /** Makes `next` current. Its version must be newer than the current one. Returns the previous snapshot. */
  swap(next: ConfigSnapshot): ConfigSnapshot;
  /** Called after each swap; returns an unsubscribe function. A throwing listener does not stop the others. */
  subscribe(listener: (next: ConfigSnapshot, prev: ConfigSnapshot) => void): () => void;
}

export class SnapshotVersionError extends Error {
  readonly code: keyof typeof CONFIG_ERROR_CODES = 'CONFIG_SNAPSHOT_VERSION';
  constructor(current: number, next: number) {
    super(`snapshot v${next} is not newer than the current v${current}`);
    this.name = 'SnapshotVersionError';
  }
}

export function createSnapshotStore(
  initial: ConfigSnapshot,
  onListenerError?: (err: unknown) => void,
): SnapshotStore {
  let current = initial;
  const listeners = new Set<(next: ConfigSnapshot, prev: ConfigSnapshot) => void>();
  return {
    current: () => current,
    swap(next) {
      if (next.version <= current.version) throw new SnapshotVersionError(current.version, next.version);
      const prev = current;
      current = next;
      for (const l of listeners) {
        try {
          l(next, prev);
        } catch (err) {
          onListenerError?.(err);
        }
      }
      return prev;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
