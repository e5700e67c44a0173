import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '@agent/timers';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { storeContract } from '../test/store-contract.js';
import { createMemoryStateStore } from './memory-store.js';
import { createPostgresStateStore } from './postgres.js';
import { createSqliteStateStore } from './sqlite.js';

/** A clock the in-process stores read; `expire` moves it past the TTL. */
function fakeTime() {
  let t = 1_000;
  return { now: () => t, expire: async () => void (t += 30_001) };
}

storeContract('memory', async () => {
  const time = fakeTime();
  return { store: createMemoryStateStore({ now: time.now }), ttl: 30_000, expire: time.expire };
});

const dirs = new Map<unknown, string>();
storeContract(
  'SQLite',
  async () => {
    const time = fakeTime();
    const dir = mkdtempSync(join(tmpdir(), 'poller-contract-'));
    const store = createSqliteStateStore(join(dir, 'poller.db'), { now: time.now });
    dirs.set(store, dir);
    return { store, ttl: 30_000, expire: time.expire };
  },
  async ({ store }) => {
    await store.close();
    rmSync(dirs.get(store)!, { recursive: true, force: true });
  },
);

// The database clock really passes: a short TTL.
const schemas = new Map<unknown, ScratchSchema>();
storeContract(
  'PostgreSQL',
  async () => {
    const scratch = await scratchSchema('pr');
    const store = await createPostgresStateStore({ pool: scratch.pool, schema: scratch.schema });
    schemas.set(store, scratch);
    return { store, ttl: 150, expire: async () => void (await sleep(200)) };
  },
  async ({ store }) => {
    await store.close();
    await schemas.get(store)!.drop();
  },
);
