import { PgError } from './errors.js';

const PLAIN_IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Checks a schema name and returns it quoted for SQL text (names are never bound parameters in DDL). */
export function quoteSchema(schema: string): string {
  if (!PLAIN_IDENTIFIER.test(schema))
    throw new PgError(
      'PG_BAD_SCHEMA_NAME',
      `schema name ${JSON.stringify(schema)} is not a plain identifier`,
    );
  return `"${schema}"`;
}
