import type { InboundSide } from '@agent/agent-runtime';
import type { KeyValueStore } from '@agent/channels';
import { migrateCluster, readLeader } from '@agent/cluster';
import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import type { Pool } from '@agent/pg';
import { scratchSchema, type ScratchSchema, cuttableLink } from '@agent/pg/testing';
import { sleep } from '@agent/timers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../test/wait-for.js';
import { createChannelStateStore } from './channel-state.js';
import { ChatClusterError } from './errors.js';
import { migrateChatCluster } from './migrations.js';
import { createInboundOwners, ownerResource, type InboundOwners } from './owners.js';

let db: ScratchSchema;
const stops: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  db = await scratchSchema('co');
  await migrateCluster(db.pool, db.schema);
  await migrateChatCluster(db.pool, db.schema);
});
afterEach(async () => {
  for (const stop of stops.splice(0).toReversed()) await stop().catch(() => {});
  await db.drop();
});

const PLUGIN = 'chat_b';
const INSTANCE = 'bot1';
const RESOURCE = ownerResource(PLUGIN, INSTANCE);
const OFFSET_KEY = `offset:${INSTANCE}`;

/** What every side of one test saw: who ran when, and whether two ever ran at once. */
interface Watch {
  running: Set<string>;
  overlaps: number;
  events: string[];
}
const newWatch = (): Watch => ({ running: new Set(), overlaps: 0, events: [] });
/** The side's start got as far as reading the stored offset. */
const started = (watch: Watch, name: string): boolean => watch.events.includes(`${name} start`);

/**
 * A side shaped like `chat_b`'s: `start` reads the stored offset, then a loop advances it and persists each
 * step (a refused write is counted, and the loop goes on, as `chat_b` does); `stop` ends the loop.
 */
function polling(name: string, store: KeyValueStore, watch: Watch, failStart = false) {
  let loop: Promise<void> | undefined;
  let controller: AbortController | undefined;
  const probe = {
    starts: 0,
    startedWith: undefined as string | undefined,
    lastWritten: undefined as string | undefined,
    refused: [] as string[],
    side: {
      plugin: PLUGIN,
      instance: INSTANCE,
      async start() {
        probe.starts += 1;
        if (failStart) throw new Error('vendor refused the token');
        if (watch.running.size > 0) watch.overlaps += 1;
        watch.running.add(name);
        probe.startedWith = await store.get(OFFSET_KEY);
        watch.events.push(`${name} start`);
        let offset = Number(probe.startedWith ?? '0');
        const abort = new AbortController();
        controller = abort;
        loop = (async () => {
          while (await sleep(20, abort.signal)) {
            offset += 1;
            try {
              await store.set(OFFSET_KEY, String(offset));
              probe.lastWritten = String(offset);
            } catch (err) {
              probe.refused.push(err instanceof ChatClusterError ? err.code : String(err));
            }
          }
        })();
      },
      async stop() {
        controller?.abort();
        await loop;
        loop = undefined;
        if (watch.running.delete(name)) watch.events.push(`${name} stop`);
      },
    } satisfies InboundSide,
  };
  return probe;
}

interface Daemon {
  owners: InboundOwners;
  logger: MemoryLogger;
  /** Channel state with this daemon's fence, over the test's own pool (the lease link may be cut). */
  store: KeyValueStore;
}

function daemon(
  holderId: string,
  o: { ttlMs: number; intervalMs?: number; pool?: Pool; trusted?: () => boolean },
): Daemon {
  const logger = createMemoryLogger();
  const owners = createInboundOwners({
    pool: o.pool ?? db.openPool(),
    schema: db.schema,
    holderId,
    ttlMs: o.ttlMs,
    ...(o.intervalMs === undefined ? {} : { intervalMs: o.intervalMs }),
    ...(o.trusted === undefined ? {} : { trusted: o.trusted }),
    logger,
  });
  stops.push(() => owners.stop());
  const store = createChannelStateStore({
    pool: db.pool,
    schema: db.schema,
    plugin: PLUGIN,
    fence: () => owners.fence(PLUGIN, INSTANCE),
  });
  return { owners, logger, store };
}

const fields = (logger: MemoryLogger, msg: string) => logger.find(msg).map((r) => r.fields);

describe('inbound owners', () => {
  it('one owner runs the side; a crashed owner stops by its trust window, the next resumes at its offset', async () => {
    const TTL = 1500;
    const link = await cuttableLink(db.url);
    const a = daemon('a#1', {
      ttlMs: TTL,
      pool: db.openPool({ url: link.url, connectTimeoutMs: 300, max: 2 }),
    });
    const b = daemon('b#1', { ttlMs: TTL });
    const watch = newWatch();
    const sideA = polling('A', a.store, watch);
    const sideB = polling('B', b.store, watch);
    a.owners.own(sideA.side);
    await waitFor('A to run', () => started(watch, 'A'));
    b.owners.own(sideB.side);
    await waitFor('A to persist offsets', () => Number(sideA.lastWritten ?? 0) >= 3);
    // B campaigned at once and at least once more since: it never got the instance.
    await sleep(TTL / 3 + 100);
    expect(watch.running).toEqual(new Set(['A']));
    expect(a.owners.owned()).toEqual([`${PLUGIN}/${INSTANCE}`]);
    expect(b.owners.owned()).toEqual([]);
    expect(b.owners.fence(PLUGIN, INSTANCE)).toEqual({ resource: RESOURCE, term: 0 });
    expect(a.owners.fence(PLUGIN, INSTANCE)).toEqual({ resource: RESOURCE, term: 1 });
    expect(fields(a.logger, 'channel owner acquired')).toEqual([
      { plugin: PLUGIN, instance: INSTANCE, term: 1 },
    ]);

    // A crash as the database sees it: A's renewals stop, nothing is given up.
    const cutAt = performance.now();
    await link.cut();
    await waitFor('B to run', () => started(watch, 'B'), 5000);
    const takeoverMs = performance.now() - cutAt;
    // The database lets B in only after A's last renewal plus the TTL; B tries every TTL/3.
    expect(takeoverMs).toBeLessThan(TTL + TTL / 3 + 1000);
    expect(watch.events).toEqual(['A start', 'A stop', 'B start']);
    expect(watch.overlaps).toBe(0);
    expect(fields(a.logger, 'channel owner lost')).toEqual([
      { plugin: PLUGIN, instance: INSTANCE, term: 1, reason: 'trust window expired' },
    ]);
    expect(fields(b.logger, 'channel owner acquired')).toEqual([
      { plugin: PLUGIN, instance: INSTANCE, term: 2 },
    ]);
    // B resumed exactly where A's last successful write left the offset.
    expect(sideA.lastWritten).toBeDefined();
    expect(sideB.startedWith).toBe(sideA.lastWritten);
    expect(await readLeader(db.pool, db.schema, RESOURCE)).toMatchObject({ holderId: 'b#1', term: 2 });

    // A late write of the old owner (its fence, and a stale copy of its term) changes nothing.
    await waitFor('B to persist', () => Number(sideB.lastWritten ?? 0) > Number(sideB.startedWith));
    await expect(a.store.set(OFFSET_KEY, '999999')).rejects.toMatchObject({ code: 'CHAT_STATE_FENCED' });
    const stale = createChannelStateStore({
      pool: db.pool,
      schema: db.schema,
      plugin: PLUGIN,
      fence: () => ({ resource: RESOURCE, term: 1 }),
    });
    await expect(stale.set(OFFSET_KEY, '999999')).rejects.toMatchObject({ code: 'CHAT_STATE_FENCED' });
    const { rows } = await db.pool.query<{ value: string; owner_epoch: number }>(
      `SELECT value, owner_epoch FROM "${db.schema}".channel_state WHERE plugin = $1 AND key = $2`,
      [PLUGIN, OFFSET_KEY],
    );
    expect(rows[0]?.owner_epoch).toBe(2);
    expect(rows[0]?.value).not.toBe('999999');
    expect(Number(rows[0]?.value)).toBeGreaterThan(Number(sideA.lastWritten));
    expect(sideB.refused).toEqual([]);
  });

  it('release stops the side and hands the instance over at once, not after the TTL', async () => {
    const TTL = 20_000;
    const a = daemon('a#1', { ttlMs: TTL, intervalMs: 200 });
    const b = daemon('b#1', { ttlMs: TTL, intervalMs: 200 });
    const watch = newWatch();
    const sideA = polling('A', a.store, watch);
    const sideB = polling('B', b.store, watch);
    const ownership = a.owners.own(sideA.side);
    await waitFor('A to run', () => started(watch, 'A'));
    b.owners.own(sideB.side);
    await waitFor('A to persist', () => sideA.lastWritten !== undefined);

    const releasedAt = performance.now();
    await ownership.release();
    expect(watch.running.has('A')).toBe(false);
    expect(fields(a.logger, 'channel owner lost')).toEqual([
      { plugin: PLUGIN, instance: INSTANCE, term: 1, reason: 'released' },
    ]);
    // Released sides keep a fence no write passes.
    expect(a.owners.fence(PLUGIN, INSTANCE)).toEqual({ resource: RESOURCE, term: 0 });
    await waitFor('B to run', () => started(watch, 'B'), 3000);
    expect(performance.now() - releasedAt).toBeLessThan(2000);
    expect(watch.events).toEqual(['A start', 'A stop', 'B start']);
    expect(watch.overlaps).toBe(0);
    expect(sideB.startedWith).toBe(sideA.lastWritten);
    expect(sideA.refused).toEqual([]);
  });

  it('a start that throws is logged, gives the instance up and is retried with backoff, never in a loop', async () => {
    const TTL = 20_000;
    const a = daemon('a#1', { ttlMs: TTL, intervalMs: 250 });
    const watch = newWatch();
    const failing = polling('A', a.store, watch, true);
    a.owners.own(failing.side);
    // Retries after 250, 500, 1000, 2000 ms (each found at the next round): about 4 starts in 3 s, where
    // retrying at every round would make 12 and a tight loop thousands.
    await sleep(3000);
    expect(failing.starts).toBeGreaterThanOrEqual(2);
    expect(failing.starts).toBeLessThanOrEqual(5);
    const failed = fields(a.logger, 'channel owner start failed');
    expect(failed).toHaveLength(failing.starts);
    expect(failed[0]).toMatchObject({ plugin: PLUGIN, error: 'vendor refused the token', retry_in_ms: 250 });
    expect(failed[1]).toMatchObject({ retry_in_ms: 500 });
    expect(a.owners.owned()).toEqual([]);

    // The term was given up after each failure: another daemon gets the instance without waiting the TTL.
    const b = daemon('b#1', { ttlMs: TTL, intervalMs: 250 });
    const sideB = polling('B', b.store, watch);
    b.owners.own(sideB.side);
    await waitFor('B to run', () => started(watch, 'B'), 3000);
    expect(b.owners.owned()).toEqual([`${PLUGIN}/${INSTANCE}`]);
  });

  it('an untrusted member stops its side and gives the instance up; trusted again, it waits its turn', async () => {
    const TTL = 20_000;
    let trusted = true;
    const a = daemon('a#1', { ttlMs: TTL, intervalMs: 200, trusted: () => trusted });
    const b = daemon('b#1', { ttlMs: TTL, intervalMs: 200 });
    const watch = newWatch();
    a.owners.own(polling('A', a.store, watch).side);
    await waitFor('A to run', () => started(watch, 'A'));
    b.owners.own(polling('B', b.store, watch).side);

    trusted = false;
    await waitFor('B to run', () => started(watch, 'B'), 3000);
    expect(fields(a.logger, 'channel owner lost')).toEqual([
      { plugin: PLUGIN, instance: INSTANCE, term: 1, reason: 'membership untrusted' },
    ]);
    trusted = true;
    await sleep(600);
    expect(watch.events).toEqual(['A start', 'A stop', 'B start']);
    expect(watch.overlaps).toBe(0);
  });

  it('refuses a second ownership of one instance; knows no fence of an instance never owned', async () => {
    const a = daemon('a#1', { ttlMs: 20_000 });
    const watch = newWatch();
    const first = a.owners.own(polling('A', a.store, watch).side);
    expect(() => a.owners.own(polling('A2', a.store, watch).side)).toThrow(
      expect.objectContaining({ code: 'CHAT_OWNER_DUPLICATE' }),
    );
    expect(a.owners.fence(PLUGIN, 'other')).toBeNull();
    await first.release();
    // Released: the instance may be owned again (a runtime that recreated it).
    a.owners.own(polling('A3', a.store, watch).side);
    await waitFor('A3 to run', () => started(watch, 'A3'));
    await a.owners.stop();
    expect(watch.running.size).toBe(0);
    expect(await readLeader(db.pool, db.schema, RESOURCE)).toBeNull();
  });
});
