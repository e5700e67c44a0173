// One behaviour table for conversation memory, run against SQLite and PostgreSQL.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scratchSchema } from '@agent/pg/testing';
import { MEMORY_ROWS_PER_SESSION, openConversationMemory, type ConversationMemory } from './memory.js';
import { createPostgresMemory } from './postgres.js';

/** A store, and how to open it again (another process, or another daemon on the same database). */
interface Opened {
  memory: ConversationMemory;
  reopen(): Promise<ConversationMemory>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

async function sqlite(): Promise<Opened> {
  const dir = mkdtempSync(join(tmpdir(), 'memory-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const open = async () => {
    const m = openConversationMemory(join(dir, 'memory.db'));
    cleanups.push(() => m.close());
    return m;
  };
  return { memory: await open(), reopen: open };
}

async function postgres(): Promise<Opened> {
  const scratch = await scratchSchema('mem');
  cleanups.push(() => scratch.drop());
  const open = async () => {
    const m = await createPostgresMemory({ pool: scratch.openPool(), schema: scratch.schema });
    cleanups.push(() => m.close());
    return m;
  };
  return { memory: await open(), reopen: open };
}

const at = new Date(Date.UTC(2026, 0, 1));
const contents = async (m: ConversationMemory, key: string, limit: number) =>
  (await m.history(key, limit)).map((x) => `${x.role}:${x.content}`);

describe.each([
  ['SQLite', sqlite],
  ['PostgreSQL', postgres],
])('conversation memory on %s', (_name, open) => {
  it('gives an unknown session no history', async () => {
    const { memory } = await open();
    expect(await memory.history('nobody', 10)).toEqual([]);
  });

  it('alternates user and assistant, oldest first, starting with a user message', async () => {
    const { memory } = await open();
    for (const i of [1, 2, 3]) await memory.appendExchange('k', `u${i}`, `a${i}`, at);
    expect(await contents(memory, 'k', 10)).toEqual([
      'user:u1',
      'assistant:a1',
      'user:u2',
      'assistant:a2',
      'user:u3',
      'assistant:a3',
    ]);
  });

  it('keeps the last `limit` messages and drops a reply cut off from its question', async () => {
    const { memory } = await open();
    for (const i of [1, 2, 3]) await memory.appendExchange('k', `u${i}`, `a${i}`, at);
    expect(await contents(memory, 'k', 4)).toEqual(['user:u2', 'assistant:a2', 'user:u3', 'assistant:a3']);
    expect(await contents(memory, 'k', 3)).toEqual(['user:u3', 'assistant:a3']);
    expect(await contents(memory, 'k', 1)).toEqual([]);
    expect(await memory.history('k', 0)).toEqual([]);
  });

  it(`prunes a session to its last ${MEMORY_ROWS_PER_SESSION} rows`, async () => {
    const { memory } = await open();
    const exchanges = MEMORY_ROWS_PER_SESSION / 2 + 2;
    for (let i = 0; i < exchanges; i++) await memory.appendExchange('k', `u${i}`, `a${i}`, at);
    await memory.appendExchange('other', 'u', 'a', at);
    const all = await contents(memory, 'k', MEMORY_ROWS_PER_SESSION * 2);
    expect(all).toHaveLength(MEMORY_ROWS_PER_SESSION);
    expect(all[0]).toBe('user:u2');
    expect(all.at(-1)).toBe(`assistant:a${exchanges - 1}`);
    expect(await contents(memory, 'other', 10)).toEqual(['user:u', 'assistant:a']);
  }, 60_000);

  it('keeps two sessions apart', async () => {
    const { memory } = await open();
    await memory.appendExchange('a', 'ua', 'aa', at);
    await memory.appendExchange('b', 'ub', 'ab', at);
    expect(await contents(memory, 'a', 10)).toEqual(['user:ua', 'assistant:aa']);
    expect(await contents(memory, 'b', 10)).toEqual(['user:ub', 'assistant:ab']);
  });

  it('stores concurrent appends of one session in call order, each exchange as one pair', async () => {
    const { memory } = await open();
    const n = 20;
    await Promise.all(Array.from({ length: n }, (_, i) => memory.appendExchange('k', `u${i}`, `a${i}`, at)));
    const expected = Array.from({ length: n }, (_, i) => [`user:u${i}`, `assistant:a${i}`]).flat();
    expect(await contents(memory, 'k', 100)).toEqual(expected);
  });

  it('close waits for appends in flight, refuses later calls, and a reopened store has them', async () => {
    const { memory, reopen } = await open();
    const pending = [1, 2, 3].map((i) => memory.appendExchange('k', `u${i}`, `a${i}`, at));
    await memory.close();
    await Promise.all(pending);
    await expect(memory.history('k', 10)).rejects.toMatchObject({ code: 'RUNTIME_MEMORY_FAILED' });
    await expect(memory.appendExchange('k', 'u', 'a', at)).rejects.toMatchObject({
      code: 'RUNTIME_MEMORY_FAILED',
    });
    await memory.close();
    const again = await reopen();
    expect(await contents(again, 'k', 10)).toEqual([
      'user:u1',
      'assistant:a1',
      'user:u2',
      'assistant:a2',
      'user:u3',
      'assistant:a3',
    ]);
  });
});

describe('conversation memory on PostgreSQL, two daemons', () => {
  it('share one history, and exchanges appended by both at once stay pairs', async () => {
    const { memory: one, reopen } = await postgres();
    const two = await reopen();
    await one.appendExchange('k', 'first', 'reply 1', at);
    expect(await contents(two, 'k', 10)).toEqual(['user:first', 'assistant:reply 1']);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? one : two).appendExchange('k', `u${i}`, `a${i}`, at),
      ),
    );
    const rows = await contents(one, 'k', 100);
    expect(rows).toHaveLength(22);
    for (let i = 0; i < rows.length; i += 2) {
      const n = rows[i]!.slice('user:u'.length);
      expect([rows[i], rows[i + 1]]).toEqual(
        i === 0 ? ['user:first', 'assistant:reply 1'] : [`user:u${n}`, `assistant:a${n}`],
      );
    }
  });

  it('fails a read with RUNTIME_MEMORY_FAILED when PostgreSQL does not answer', async () => {
    const scratch = await scratchSchema('mem');
    cleanups.push(() => scratch.drop());
    const pool = scratch.openPool();
    const memory = await createPostgresMemory({ pool, schema: scratch.schema });
    await pool.end();
    await expect(memory.history('k', 10)).rejects.toMatchObject({ code: 'RUNTIME_MEMORY_FAILED' });
    await expect(memory.appendExchange('k', 'u', 'a', at)).rejects.toMatchObject({
      code: 'RUNTIME_MEMORY_FAILED',
    });
  });
});
