/**
 * One tick of one job: call the kind, then dedup against the seen set, record a baseline or deliver the new
 * items oldest first with a commit per item. It returns how it ended; the caller records that (cursor,
 * schedule, errors, breaker) with the tick's last write.
 */
import { timeSlicer } from '@agent/timers';
import {
  maxItemsConsidered,
  PermanentError,
  renderTemplate,
  retryAfterOf,
  safeReason,
  TransientError,
  type JsonValue,
  type PollItem,
  type TickResult,
} from '@agent/poller-core';
import { sleep } from './clock.js';
import { kindLogger, labelsOf } from './job-log.js';
import { failure, type TickCounts, type TickOutcome } from './outcome.js';
import { fetchItems } from './tick-fetch.js';
import type { TickEnv, TickRun } from './tick-types.js';

/** The seen set holds at least this many ids. */
export const SEEN_MIN = 500;
/** Ids per seen-set query and per baseline transaction. */
const SEEN_CHUNK = 1000;

/** The items of one fetch that the tick works on. */
interface Selection {
  /** Every id of the considered items: they survive the seen set's eviction. */
  allIds: string[];
  /** Items not seen before, oldest first. */
  fresh: PollItem[];
  cursor: JsonValue | undefined;
  maxItems: number;
  seenLimit: number;
}

export async function runTick(env: TickEnv, run: TickRun): Promise<TickOutcome> {
  const fetched = await fetchItems(env, run);
  if ('type' in fetched) return fetched;
  const counts: TickCounts = { seen: 0, dispatched: 0 };
  const slicer = timeSlicer();
  const selection = consider(env, run, fetched);
  try {
    await dropSeen(env, run, selection, slicer);
    counts.seen = selection.fresh.length;
    if (counts.seen) env.metrics.itemsSeen(labelsOf(run.def), counts.seen);
    if (!run.state.baselined && !run.def.kind.backfillOnFirstTick)
      return await recordBaseline(env, run, selection, slicer);
    return await deliverFresh(env, run, selection, counts);
  } catch (err) {
    const badTemplate = err instanceof Error && (err as { code?: string }).code === 'POLLER_BAD_TEMPLATE';
    return failure(badTemplate ? new PermanentError(err.message) : err, counts, selection.maxItems);
  }
}

/**
 * The work is bounded by `max_items_considered` (the newest items) and runs in slices, so a huge response
 * never holds the event loop (or the admin API) for long.
 */
function consider(env: TickEnv, run: TickRun, result: TickResult): Selection {
  const cap = maxItemsConsidered(run.def.config);
  if (result.items.length > cap)
    kindLogger(env.metrics, run.def, run.log).warn(
      'poller tick considered only the newest items of a large fetch',
      {
        considered: cap,
        dropped: result.items.length - cap,
        hint: 'raise max_items_considered if the source really lists more new items per tick',
      },
    );
  const items = uniqueById(result.items.length > cap ? result.items.slice(-cap) : result.items);
  // Sized by what a tick considers now: a larger set left by an older version shrinks at the next eviction.
  const maxItems = Math.max(Math.min(run.state.maxItems, cap), items.length);
  return {
    allIds: items.map((i) => i.id),
    fresh: items,
    cursor: result.cursor as JsonValue | undefined,
    maxItems,
    seenLimit: Math.max(SEEN_MIN, 2 * maxItems),
  };
}

function uniqueById(items: PollItem[]): PollItem[] {
  const seen = new Set<string>();
  return items.filter((i) => (seen.has(i.id) ? false : (seen.add(i.id), true)));
}

/** Leaves in `selection.fresh` only the items the seen set does not hold. */
async function dropSeen(
  env: TickEnv,
  run: TickRun,
  selection: Selection,
  slicer: ReturnType<typeof timeSlicer>,
): Promise<void> {
  const { allIds } = selection;
  const known = new Set<string>();
  for (let i = 0; i < allIds.length; i += SEEN_CHUNK) {
    const chunk = allIds.length <= SEEN_CHUNK ? allIds : allIds.slice(i, i + SEEN_CHUNK);
    for (const id of await env.store.seenAmong(run.def.id, chunk)) known.add(id);
    await slicer.maybeYield();
  }
  selection.fresh = selection.fresh.filter((i) => !known.has(i.id));
}

/**
 * The first tick records what the source holds now as seen and delivers nothing. A large baseline goes in
 * several short transactions; the last chunk goes with the state (and the eviction) in the tick's last
 * write, so a tick that dies half way simply baselines again.
 */
async function recordBaseline(
  env: TickEnv,
  run: TickRun,
  selection: Selection,
  slicer: ReturnType<typeof timeSlicer>,
): Promise<TickOutcome> {
  const ids = selection.fresh.map((i) => i.id);
  let from = 0;
  for (; ids.length - from > SEEN_CHUNK; from += SEEN_CHUNK) {
    await run.writer.write({ addSeen: ids.slice(from, from + SEEN_CHUNK) });
    await slicer.maybeYield();
  }
  return {
    type: 'ok',
    baseline: true,
    seen: ids.length,
    dispatched: 0,
    fresh: ids.length,
    ...(selection.cursor !== undefined ? { cursor: selection.cursor } : {}),
    maxItems: selection.maxItems,
    seenOps: { addSeen: ids.slice(from), keepSeen: selection.allIds, seenLimit: selection.seenLimit },
  };
}

/** Delivers new items oldest first, each committed with its seen id as it is accepted. */
async function deliverFresh(
  env: TickEnv,
  run: TickRun,
  selection: Selection,
  counts: TickCounts,
): Promise<TickOutcome> {
  const { def, signal, log } = run;
  const { fresh, maxItems } = selection;
  const max =
    typeof def.config.max_per_tick === 'number' ? def.config.max_per_tick : Number.POSITIVE_INFINITY;
  const batch = fresh.slice(0, max);
  const failed = await deliverBatch(env, run, batch, counts);
  if (failed) return failure(failed, counts, maxItems);
  if (signal.aborted && counts.dispatched < batch.length) {
    log.info('poller tick stopped before delivering every item', {
      delivered: counts.dispatched,
      left: fresh.length - counts.dispatched,
    });
    return { type: 'aborted', ...counts };
  }
  // Carry-over: undelivered items stay new, and the cursor waits until they are delivered.
  const carry = fresh.length > counts.dispatched;
  return {
    type: 'ok',
    baseline: false,
    ...counts,
    fresh: fresh.length,
    ...(!carry && selection.cursor !== undefined ? { cursor: selection.cursor } : {}),
    maxItems,
    seenOps: counts.dispatched > 0 ? { keepSeen: selection.allIds, seenLimit: selection.seenLimit } : {},
  };
}

/** Sends the batch until it is done or aborted; returns the error of a failed send, if any. */
async function deliverBatch(
  env: TickEnv,
  run: TickRun,
  batch: PollItem[],
  counts: TickCounts,
): Promise<TransientError | null> {
  const { def, signal, writer } = run;
  const template = String(def.config.message_template ?? '');
  const delay = typeof def.config.dispatch_delay_ms === 'number' ? def.config.dispatch_delay_ms : 0;
  const { channel, to } = def.deliver;
  for (const [i, item] of batch.entries()) {
    if (signal.aborted) break;
    if (i > 0 && delay > 0 && !(await sleep(env.clock, delay, signal))) break;
    const text = renderTemplate(template, item.fields);
    // A holder stopped past its lease (SIGSTOP, a long GC pause) must not send what another holder sends.
    await writer.confirmLease?.();
    // A replace or remove meanwhile: nothing more is sent.
    if (signal.aborted) break;
    try {
      await env.dispatcher.deliver({
        agentId: def.agent,
        channel,
        to,
        text,
        jobId: def.id,
        itemId: item.id,
        signal,
      });
    } catch (err) {
      const retryAfterMs = retryAfterOf(err);
      return new TransientError(`delivery to channel ${channel} failed: ${safeReason(err)}`, {
        cause: err,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      });
    }
    // The id joins the seen set in the same transaction that records the delivery. Eviction waits for the
    // tick's last write, which passes the ids to keep once.
    await writer.write({
      addSeen: [item.id],
      delivery: { itemId: item.id, channel, to, at: env.clock.now() },
    });
    counts.dispatched++;
    env.metrics.itemsDispatched(labelsOf(def), 1);
    await followUp(env, run, item);
  }
  return null;
}

/** The kind's follow-up after a delivery (mark read, ack): a failure is logged, the item never repeats. */
async function followUp(env: TickEnv, run: TickRun, item: PollItem): Promise<void> {
  if (!item.onDelivered) return;
  try {
    await item.onDelivered();
  } catch (err) {
    run.log.warn('poller item follow-up failed after delivery', {
      item_id: item.id,
      reason: env.redact(safeReason(err)),
    });
  }
}
