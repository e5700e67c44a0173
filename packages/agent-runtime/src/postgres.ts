/**
 * @agent/agent-runtime/postgres — conversation memory in PostgreSQL for cluster mode, so that a
 * conversation continued on another daemon sees its whole history. Same semantics as the SQLite memory:
 * exchanges stored as pairs, history cut to start with a user message, `MEMORY_ROWS_PER_SESSION` rows kept.
 * The pool (and its session timeouts) belongs to the caller; `close` leaves it open. Single-host daemons
 * never load this module.
 */
import { inTransaction, migrate, quoteSchema, type Migration, type Pool } from '@agent/pg';
import { AgentRuntimeError } from './errors.js';
import {
  historyOfNewestFirst,
  MEMORY_ROWS_PER_SESSION,
  type ConversationMemory,
  type MemoryMessage,
} from './memory.js';
import { createSerialQueues } from './serial-queues.js';

export type { ConversationMemory, MemoryMessage } from './memory.js';

const MEMORY_COMPONENT = 'memory';

const MEMORY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'memory messages per session',
    sql: `
      CREATE TABLE {schema}.memory_message (
        id          bigserial PRIMARY KEY,
        session_key text NOT NULL,
        role        text NOT NULL CHECK (role IN ('user', 'assistant')),
        content     text NOT NULL,
        created_at  timestamptz NOT NULL
      );
      CREATE INDEX memory_message_session ON {schema}.memory_message (session_key, id);
    `,
  },
];

export interface PostgresMemoryOptions {
  pool: Pool;
  /** The schema the table lives in (created when missing); a plain lower-case identifier. */
  schema: string;
}

function memoryFailed(what: string, err: unknown): AgentRuntimeError {
  const reason = err instanceof Error ? err.message : String(err);
  return new AgentRuntimeError('RUNTIME_MEMORY_FAILED', `${what}: ${reason}; check that PostgreSQL answers`, {
    cause: err,
  });
}

/** Migrates the `memory` component and opens the memory. Throws `RUNTIME_MEMORY_FAILED`. */
export async function createPostgresMemory(options: PostgresMemoryOptions): Promise<ConversationMemory> {
  const { pool } = options;
  try {
    await migrate(pool, {
      schema: options.schema,
      component: MEMORY_COMPONENT,
      migrations: MEMORY_MIGRATIONS,
    });
  } catch (err) {
    throw memoryFailed(`cannot prepare the memory table in schema ${options.schema}`, err);
  }
  const table = `${quoteSchema(options.schema)}.memory_message`;
  // Serial per session in this process; the advisory lock serialises daemons, so that one exchange's two
  // rows get adjacent ids even when two daemons append to one session at once.
  const queues = createSerialQueues();
  let closed = false;
  const ensureOpen = () => {
    if (closed) throw new AgentRuntimeError('RUNTIME_MEMORY_FAILED', 'the conversation memory is closed');
  };

  const append = (key: string, user: string, assistant: string, at: Date): Promise<void> =>
    inTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`agent-memory:${key}`]);
      await client.query(
        `INSERT INTO ${table} (session_key, role, content, created_at)
         VALUES ($1, 'user', $2, $4), ($1, 'assistant', $3, $4)`,
        [key, user, assistant, at],
      );
      await client.query(
        `DELETE FROM ${table} WHERE session_key = $1 AND id <= (
           SELECT id FROM ${table} WHERE session_key = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`,
        [key, MEMORY_ROWS_PER_SESSION],
      );
    });

  return {
    async history(sessionKey, limit) {
      ensureOpen();
      if (limit <= 0) return [];
      try {
        const { rows } = await pool.query<MemoryMessage>(
          `SELECT role, content FROM ${table} WHERE session_key = $1 ORDER BY id DESC LIMIT $2`,
          [sessionKey, limit],
        );
        return historyOfNewestFirst(rows);
      } catch (err) {
        throw memoryFailed('cannot read conversation memory', err);
      }
    },
    async appendExchange(sessionKey, user, assistant, at) {
      ensureOpen();
      await queues.run(sessionKey, () =>
        append(sessionKey, user, assistant, at).catch((err: unknown) => {
          throw memoryFailed('cannot write conversation memory', err);
        }),
      );
    },
    async close() {
      closed = true;
      await queues.idle();
    },
  };
}
