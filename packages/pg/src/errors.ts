/** What one code means and what to do about it. */
export interface PgErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

/** Every failure this package reports itself carries one of these stable codes. */
export const PG_ERROR_CODES = {
  PG_BAD_SCHEMA_NAME: {
    meaning:
      'A schema name is not a plain lower-case SQL identifier (letters, digits, `_`, at most 63 bytes).',
    action: 'Use a name such as `agent` or `agent_prod`.',
  },
  PG_SCHEMA_TOO_NEW: {
    meaning:
      'The database holds migrations of a component that this build does not know: a newer daemon migrated it.',
    action: 'Run the newer daemon version here too, or point this daemon at another schema.',
  },
  PG_MIGRATION_FAILED: {
    meaning: 'A migration step failed; its transaction rolled back, so the schema is as before.',
    action: 'Read the cause in the message (permissions, an object created by hand), fix it and start again.',
  },
  PG_INT8_OVERFLOW: {
    meaning: 'A bigint column held a value beyond 2^53 - 1, which a JavaScript number cannot hold exactly.',
    action: 'Report it: the daemon keeps its counters and fencing tokens far below that.',
  },
} as const satisfies Record<string, PgErrorInfo>;

export type PgErrorCode = keyof typeof PG_ERROR_CODES;

export class PgError extends Error {
  override readonly name = 'PgError';
  constructor(
    readonly code: PgErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${message} [${code}]`, options);
  }
}
