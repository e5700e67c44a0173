import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '@agent/config-snapshot';
import { baseFiles, tempConfigPool } from '@agent/config-snapshot/testing';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectBundleFiles, isClusterWideFile } from './bundle-files.js';
import { bundleHash, desiredVersion, loadBundle, pushBundle } from './bundle.js';
import { materializeBundle } from './materialize.js';
import { migrateCluster } from './migrations.js';

let db: ScratchSchema;
const dirs = tempConfigPool();
beforeEach(async () => {
  db = await scratchSchema('cl');
  await migrateCluster(db.pool, db.schema);
});
afterEach(async () => {
  dirs.cleanup();
  await db.drop();
});

describe('config bundle', () => {
  it('the desired texts again: no new row; other texts, next version; the desired version only goes up', async () => {
    expect(await desiredVersion(db.pool, db.schema)).toBe(0);
    const v1 = { 'llm.yaml': 'providers: {}\n', 'agents.d/a.yaml': 'x: 1\n' };
    const first = await pushBundle(db.pool, db.schema, v1, 'op@host-a');
    expect(first).toEqual({ version: 1, hash: bundleHash(v1), created: true });
    const again = await pushBundle(
      db.pool,
      db.schema,
      { 'agents.d/a.yaml': 'x: 1\n', 'llm.yaml': 'providers: {}\n' },
      'op@host-b',
    );
    expect(again).toEqual({ version: 1, hash: first.hash, created: false });
    const second = await pushBundle(db.pool, db.schema, { ...v1, 'agents.d/a.yaml': 'x: 2\n' }, 'op@host-a');
    expect(second).toMatchObject({ version: 2, created: true });
    expect(await desiredVersion(db.pool, db.schema)).toBe(2);
    // Pushing the first texts again is a rollback as version 3: every daemon reconciles it like any change.
    expect(await pushBundle(db.pool, db.schema, v1, 'op')).toEqual({
      version: 3,
      hash: first.hash,
      created: true,
    });
    expect(await desiredVersion(db.pool, db.schema)).toBe(3);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".config_bundle`);
    expect(rows[0].n).toBe(3);
    expect(await loadBundle(db.pool, db.schema, 2)).toMatchObject({
      version: 2,
      hash: second.hash,
      files: { 'llm.yaml': 'providers: {}\n', 'agents.d/a.yaml': 'x: 2\n' },
      createdBy: 'op@host-a',
    });
    await expect(loadBundle(db.pool, db.schema, 9)).rejects.toThrow(/CLUSTER_BUNDLE_MISSING/);
  });

  it('newVersion: the desired texts again as the next version', async () => {
    const files = { 'llm.yaml': 'providers: {}\n' };
    expect(await pushBundle(db.pool, db.schema, files, 'op')).toMatchObject({ version: 1, created: true });
    const bumped = await pushBundle(db.pool, db.schema, files, 'op', { newVersion: true });
    expect(bumped).toEqual({ version: 2, hash: bundleHash(files), created: true });
    expect(await desiredVersion(db.pool, db.schema)).toBe(2);
    expect(await pushBundle(db.pool, db.schema, files, 'op')).toMatchObject({ version: 2, created: false });
  });

  it('concurrent pushes of the same texts make one version', async () => {
    const files = { 'pollers.yaml': 'pollers: { jobs: [] }\n' };
    const results = await Promise.all(
      [1, 2, 3, 4].map((i) => pushBundle(db.pool, db.schema, files, `op${i}`)),
    );
    expect(new Set(results.map((r) => r.version)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('host-local files and paths outside the config dir are refused', async () => {
    for (const rel of [
      'cluster.yaml',
      'broker.yaml',
      'runtime.yaml',
      'secrets/pg.url',
      'agents.d/../x.yaml',
      '/etc/passwd',
    ])
      await expect(pushBundle(db.pool, db.schema, { [rel]: 'x' }, 'op')).rejects.toThrow(
        /CLUSTER_BUNDLE_BAD_PATH/,
      );
    expect(isClusterWideFile('plugins/log.yaml')).toBe(true);
    expect(isClusterWideFile('agents.d/.hidden.yaml')).toBe(false);
  });

  it('a materialised bundle loads with this host`s own host-local files and secrets', async () => {
    const host = dirs.make({
      ...baseFiles(),
      'runtime.yaml': 'data_dir: ./data-host-a\n',
      'llm.yaml':
        'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key: ${file:./key}\n',
    });
    host.write('../key', 'host-a-key-1234\n', 0o600);
    const files = collectBundleFiles(host.config);
    expect(Object.keys(files).sort()).toEqual(['agents.d/a.yaml', 'llm.yaml', 'plugins/log.yaml']);
    const pushed = await pushBundle(db.pool, db.schema, files, 'op');
    const bundle = await loadBundle(db.pool, db.schema, pushed.version);
    const parentDir = join(host.root, 'cluster');
    const dir = materializeBundle({ bundle, localConfigDir: host.config, parentDir });
    expect(dir).toBe(join(parentDir, 'config-v1'));
    expect(statSync(join(dir, 'llm.yaml')).mode & 0o777).toBe(0o600);
    const r = loadConfig(dir, { cwd: host.root, env: {} });
    expect(r.errors).toEqual([]);
    expect(r.snapshot!.runtime.data_dir).toBe('./data-host-a');
    expect(r.snapshot!.llm.providers['main']!.api_key).toBe('host-a-key-1234');
    // Host-local files follow the host: a removed memory.yaml disappears, an edited runtime.yaml is seen.
    host.write('runtime.yaml', 'data_dir: ./data-moved\n');
    expect(materializeBundle({ bundle, localConfigDir: host.config, parentDir })).toBe(dir);
    expect(readFileSync(join(dir, 'runtime.yaml'), 'utf8')).toBe('data_dir: ./data-moved\n');
    expect(existsSync(join(dir, 'cluster.yaml'))).toBe(false);
  });
});
