/**
 * The config bundle: versioned file texts in PostgreSQL, never resolved secret values. A push of the texts
 * of the desired bundle changes nothing; any other push is a new version, a rollback to earlier texts too.
 * The desired version therefore only goes up, and "reconcile once per version" can compare by order.
 */
import { createHash } from 'node:crypto';
import { inTransaction, quoteSchema, type Pool, type Queryable } from '@agent/pg';
import { assertClusterWideFiles } from './bundle-files.js';
import { ClusterError } from './errors.js';

export interface Bundle {
  readonly version: number;
  readonly hash: string;
  /** File texts by config-relative path. */
  readonly files: Readonly<Record<string, string>>;
  readonly createdAt: Date;
  readonly createdBy: string;
}

export interface PushResult {
  version: number;
  hash: string;
  /** False when these are the texts of the desired bundle already (nothing changed). */
  created: boolean;
}

/** sha256 over the sorted paths and texts: the same files give the same hash on every host. */
export function bundleHash(files: Readonly<Record<string, string>>): string {
  const h = createHash('sha256');
  for (const rel of Object.keys(files).sort()) {
    const text = files[rel] ?? '';
    h.update(`${rel}\0${Buffer.byteLength(text)}\0${text}`);
  }
  return h.digest('hex');
}

export async function pushBundle(
  pool: Pool,
  schemaName: string,
  files: Readonly<Record<string, string>>,
  createdBy: string,
  options: { newVersion?: boolean } = {},
): Promise<PushResult> {
  const schema = quoteSchema(schemaName);
  assertClusterWideFiles(files);
  const hash = bundleHash(files);
  return inTransaction(pool, async (client) => {
    // Pushes one at a time: versions stay dense and two pushes of the same texts make one version.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`agent-bundle:${schemaName}`]);
    // A new version of the same texts: what each host resolves from them (secret files, host-local files)
    // changed, and a daemon applies a change only as a newer version.
    const found = options.newVersion
      ? { rows: [] }
      : await client.query<{ version: number }>(
          `SELECT b.version FROM ${schema}.config_bundle b
         JOIN ${schema}.cluster_state s ON s.desired_config_version = b.version
        WHERE b.hash = $1`,
          [hash],
        );
    let version = found.rows[0]?.version;
    const created = version === undefined;
    if (version === undefined) {
      const sorted = Object.fromEntries(
        Object.keys(files)
          .sort()
          .map((k) => [k, files[k]]),
      );
      const inserted = await client.query<{ version: number }>(
        `INSERT INTO ${schema}.config_bundle (hash, files, created_by) VALUES ($1, $2, $3) RETURNING version`,
        [hash, JSON.stringify(sorted), createdBy],
      );
      version = inserted.rows[0]!.version;
    }
    await client.query(`UPDATE ${schema}.cluster_state SET desired_config_version = $1`, [version]);
    return { version, hash, created };
  });
}

export async function loadBundle(db: Queryable, schemaName: string, version: number): Promise<Bundle> {
  const { rows } = await db.query<{
    version: number;
    hash: string;
    files: Record<string, string>;
    created_at: Date;
    created_by: string;
  }>(
    `SELECT version, hash, files, created_at, created_by FROM ${quoteSchema(schemaName)}.config_bundle
      WHERE version = $1`,
    [version],
  );
  const row = rows[0];
  if (!row)
    throw new ClusterError('CLUSTER_BUNDLE_MISSING', `config bundle version ${version} does not exist`);
  return {
    version: row.version,
    hash: row.hash,
    files: row.files,
    createdAt: row.created_at,
    createdBy: row.created_by,
  };
}

/** The version every daemon should run; 0 before the first push. */
export async function desiredVersion(db: Queryable, schemaName: string): Promise<number> {
  const { rows } = await db.query<{ v: number }>(
    `SELECT desired_config_version AS v FROM ${quoteSchema(schemaName)}.cluster_state`,
  );
  return rows[0]?.v ?? 0;
}
