/**
 * Conversation memory: a table of messages per session key, in SQLite (WAL) here and in PostgreSQL in
 * cluster mode (`./postgres`). A turn that produced a reply stores its user text and its final reply as
 * one pair, so history always alternates user/assistant and starts with a user message (both providers
 * need that). Tool calls are not stored.
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { AgentRuntimeError } from './errors.js';

// Required, not imported: Node's `import` of a CommonJS package scans its source for named exports, and the
// memory that takes stays for the life of the process (about 1 MB of resident memory for this package,
// measured in a bare `node`).
const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

export interface MemoryMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface ConversationMemory {
  /** The last `limit` messages of a session, oldest first, starting with a user message. */
  history(sessionKey: string, limit: number): Promise<MemoryMessage[]>;
  /** Stores one exchange (user text, final reply) atomically; one session's exchanges land in call order. */
  appendExchange(sessionKey: string, user: string, assistant: string, at: Date): Promise<void>;
  close(): Promise<void>;
}

/** Rows newest first → the history: oldest first, without a leading reply (a cut through an exchange). */
export function historyOfNewestFirst(rows: readonly MemoryMessage[]): MemoryMessage[] {
  const oldestFirst = rows.toReversed();
  const start = oldestFirst.findIndex((r) => r.role === 'user');
  if (start < 0) return [];
  return oldestFirst.slice(start).map((r) => ({ role: r.role, content: r.content }));
}

/** Rows kept per session (the largest `max_messages` allowed); older rows are deleted. */
export const MEMORY_ROWS_PER_SESSION = 1000;

/** Opens (creating if needed) the memory database at `path`. Throws `RUNTIME_MEMORY_FAILED`. */
export function openConversationMemory(path: string): ConversationMemory {
  let db: BetterSqlite3.Database;
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('synchronous = NORMAL');
    db.exec(`CREATE TABLE IF NOT EXISTS memory_messages (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_key TEXT NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
      content TEXT NOT NULL,
      created_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS memory_messages_session ON memory_messages (session_key, id);`);
  } catch (err) {
    throw new AgentRuntimeError(
      'RUNTIME_MEMORY_FAILED',
      `cannot open the memory database ${path}: ${(err as Error).message}; check memory.yaml path and that its directory is writable`,
      { cause: err },
    );
  }
  const insert = db.prepare(
    'INSERT INTO memory_messages (session_key, role, content, created_at) VALUES (?, ?, ?, ?)',
  );
  const prune = db.prepare(
    `DELETE FROM memory_messages WHERE session_key = ? AND id <= (
       SELECT id FROM memory_messages WHERE session_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
  );
  const last = db.prepare(
    'SELECT role, content FROM memory_messages WHERE session_key = ? ORDER BY id DESC LIMIT ?',
  );
  const exchange = db.transaction((key: string, user: string, assistant: string, at: string) => {
    insert.run(key, 'user', user, at);
    insert.run(key, 'assistant', assistant, at);
    prune.run(key, key, MEMORY_ROWS_PER_SESSION);
  });
  const ensureOpen = () => {
    if (!db.open) throw new AgentRuntimeError('RUNTIME_MEMORY_FAILED', 'the conversation memory is closed');
  };
  // Synchronous underneath: each call runs to its end before the next starts, so appends stay serial.
  return {
    async history(sessionKey, limit) {
      ensureOpen();
      if (limit <= 0) return [];
      return historyOfNewestFirst(last.all(sessionKey, limit) as MemoryMessage[]);
    },
    async appendExchange(sessionKey, user, assistant, at) {
      ensureOpen();
      exchange(sessionKey, user, assistant, at.toISOString());
    },
    async close() {
      if (db.open) db.close();
    },
  };
}
