import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, job, metricValue } from '../test/helpers.js';
import { PermanentError, TransientError } from '@agent/poller-core';
import { createSqliteStateStore, type SqliteStateStore } from './sqlite.js';
import { createFakeClock } from './testing.js';

let dir: string;
let opened: SqliteStateStore[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'poller-sqlite-'));
});
afterEach(async () => {
  for (const s of opened) await s.close();
  opened = [];
  rmSync(dir, { recursive: true, force: true });
});

function open(file = join(dir, 'nested', 'dir', 'poller.db'), now?: () => number) {
  const s = createSqliteStateStore(file, now ? { now } : {});
  opened.push(s);
  return s;
}

describe('SQLite state store', () => {
  it('creates the file and its directory, runs WAL and versioned migrations once', async () => {
    const file = join(dir, 'nested', 'dir', 'poller.db');
    const a = open(file);
    expect(existsSync(file)).toBe(true);
    expect(a.journalMode()).toBe('wal');
    expect(a.migrations()).toEqual([1]);
    await a.close();
    const b = open(file);
    expect(b.migrations()).toEqual([1]);
    const raw = new Database(file, { readonly: true });
    const tables = (
      raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
        name: string;
      }[]
    ).map((t) => t.name);
    raw.close();
    expect(tables).toEqual(
      expect.arrayContaining(['poll_state', 'poll_seen', 'poll_lease', 'poll_delivery', 'poll_migrations']),
    );
  });

  it('refuses an unusable path with POLLER_STATE_DB', () => {
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, 'not a directory');
    expect(() => createSqliteStateStore(join(blocker, 'poller.db'))).toThrow(
      expect.objectContaining({ code: 'POLLER_STATE_DB' }),
    );
  });

  // The behaviours every store shares are in store-contract.test.ts.
  describe('lease and fencing', () => {
    it('fences across two connections to one file', async () => {
      let t = 0;
      const file = join(dir, 'shared.db');
      const s1 = open(file, () => t);
      const s2 = open(file, () => t);
      const a = (await s1.acquireLease('j', 'A', 1000))!;
      t = 2000;
      await s2.acquireLease('j', 'B', 1000);
      await expect(s1.commit('j', { state: { paused: true } }, a)).rejects.toMatchObject({
        code: 'POLLER_LEASE_LOST',
      });
    });
  });
});

describe('runner on SQLite', () => {
  it('the alert cooldown survives a new runner on the same file', async () => {
    const clock = createFakeClock();
    const file = join(dir, 'cooldown.db');
    const store1 = open(file, clock.now);
    const a = harness({
      clock,
      store: store1,
      jobs: [job('j1', { failure_to: { channel: 'chat_b', to: 'ops' } })],
    });
    a.fake.setDefault(new PermanentError('revoked'));
    await a.service.start();
    await a.clock.advance(0);
    expect(a.dispatcher.texts('chat_b')).toHaveLength(1);
    await a.service.stop();
    await store1.close();
    // Ten minutes later, a new process on the same file: resumed, fails again, no second alert.
    await clock.advance(10 * 60_000);
    const store2 = open(file, clock.now);
    const b = harness({
      clock,
      store: store2,
      jobs: [job('j1', { failure_to: { channel: 'chat_b', to: 'ops' } })],
    });
    b.fake.setDefault(new PermanentError('revoked'));
    await b.service.start();
    await b.service.resume('j1');
    await b.clock.advance(0);
    expect((await store2.load('j1'))!.paused).toBe(true);
    expect(b.dispatcher.texts('chat_b')).toHaveLength(0);
    expect(b.logger.find('poller failure alert suppressed by cooldown')).toHaveLength(1);
    await b.service.stop();
  });

  it('taking over an expired lease increments poller_lease_takeovers_total', async () => {
    const clock = createFakeClock();
    const store = open(join(dir, 'takeover.db'), clock.now);
    await store.acquireLease('j1', 'crashed-holder', 1000);
    await clock.advance(2000);
    const h = harness({ clock, store, jobs: [job('j1')] });
    await h.service.start();
    await h.clock.advance(0);
    expect(h.fake.calls).toHaveLength(1);
    expect(await metricValue(h.metrics, 'poller_lease_takeovers_total', { job_id: 'j1' })).toBe(1);
    await h.service.stop();
  });

  it('a job whose lease another live holder has is not ticked here', async () => {
    const clock = createFakeClock();
    const store = open(join(dir, 'busy.db'), clock.now);
    await store.acquireLease('j1', 'other-process', 120_000);
    const h = harness({ clock, store, jobs: [job('j1')] });
    h.fake.setDefault(new TransientError('should not run'));
    await h.service.start();
    await h.clock.advance(60_000);
    expect(h.fake.calls).toHaveLength(0);
    await h.clock.advance(61_000);
    expect(h.fake.calls).toHaveLength(1);
    await h.service.stop();
  });
});
