/** Many jobs' stored states in one read when they are many, else one read per job. */
import type { JobState, StateStore } from './store.js';

/** From this many jobs one read of every row is cheaper than a read per job. */
const READ_ALL_FROM = 64;

export async function statesOf(store: StateStore, ids: readonly string[]): Promise<Map<string, JobState>> {
  const rows =
    ids.length >= READ_ALL_FROM
      ? await store.loadAll()
      : (await Promise.all(ids.map((id) => store.load(id)))).filter((s) => s !== null);
  return new Map(rows.map((s) => [s.jobId, s]));
}
