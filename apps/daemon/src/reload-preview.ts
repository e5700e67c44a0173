/** A reload's dry run: the same read and the same plans, then stop. */
import type { LoadResult } from '@agent/config-snapshot';
import type { ReloadOutcome, ReloadPipelineDeps, ReloadRequest } from './reload.js';
import { makeAck, rejectedTotal, type ApplyReports } from './reload-ack.js';
import { readNext } from './reload-read.js';

/** One dry run: read like `runBatch`, ask the subsystems for their plans, change nothing (not even `lastRead`). */
export async function previewOnce(
  deps: ReloadPipelineDeps,
  req: ReloadRequest,
  lastRead: string,
  now: () => number,
): Promise<ReloadOutcome> {
  const t0 = now();
  const prev = deps.store.current();
  let result: LoadResult | null = null;
  let reports: ApplyReports = new Map();
  let unchanged = false;
  try {
    result = await readNext(deps, prev);
    // The same test as a reload: the bytes of the last read, which built the running snapshot, change nothing.
    unchanged = result.unchanged && result.contentHash === lastRead;
    const next = unchanged ? prev : result.snapshot;
    if (next) reports = (await deps.preview?.(next, prev, result)) ?? reports;
  } catch (err) {
    deps.logger.error('reload preview failed', { err: prev.redact((err as Error).message) });
  }
  const elapsed = now() - t0;
  const ack = makeAck(req, result, reports, prev, elapsed);
  const version = !unchanged && result?.snapshot ? result.snapshot.version : prev.version;
  deps.logger.info('config reload previewed', {
    version,
    applied: ack.applied,
    rejected_count: rejectedTotal(ack),
    elapsed_ms: Math.round(elapsed),
  });
  return { ack: { ...ack, version, dry_run: true }, skipped: false, unchanged, result, reports };
}
