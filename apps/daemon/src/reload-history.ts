/** The versions the daemon ran, newest first, with what triggered each: what the console's reload page lists. */

interface ReloadRecord {
  version: number;
  /** RFC 3339. */
  at: string;
  /** What asked for it: `start`, or the triggers a reload coalesced (`cli`, `watcher`, `admin`, `signal`). */
  triggers: string[];
  applied: number;
  rejected: number;
}

export interface ReloadHistory {
  record(entry: Omit<ReloadRecord, 'at'>): void;
  list(): readonly ReloadRecord[];
}

/** Keeps the last `max` versions (a long-running daemon reloads often; the log has them all). */
export function createReloadHistory(now: () => Date = () => new Date(), max = 50): ReloadHistory {
  const entries: ReloadRecord[] = [];
  return {
    record(entry) {
      entries.unshift({ ...entry, at: now().toISOString() });
      entries.length = Math.min(entries.length, max);
    },
    list: () => entries.map((e) => ({ ...e, triggers: [...e.triggers] })),
  };
}
