import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '@agent/config-snapshot';
import { baseFiles, tempConfigPool, type TempDir } from '@agent/config-snapshot/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterBrokerIssues, clusterOf, clusterSectionReader, clusterSettingsChanged } from './section.js';

const pool = tempConfigPool();
afterEach(pool.cleanup);

const load = (d: TempDir) =>
  loadConfig(d.config, { cwd: d.root, env: {}, sections: [clusterSectionReader({ host: 'host-a' })] });

describe('cluster.yaml', () => {
  it('absent: single-host mode, no issue', () => {
    const r = load(pool.make(baseFiles()));
    expect(clusterOf(r.snapshot!)).toBeNull();
    expect([...r.errors, ...r.warnings].filter((i) => i.section === 'cluster')).toEqual([]);
  });

  it('fills defaults, takes daemon_id from the host name and resolves the URL from a secret file', () => {
    const d = pool.make({ ...baseFiles(), 'cluster.yaml': 'postgres:\n  url: ${file:./pg.url}\n' });
    writeFileSync(join(d.root, 'pg.url'), 'postgres://u:secret@db:5432/agent\n', { mode: 0o600 });
    const c = clusterOf(load(d).snapshot!);
    expect(c).toMatchObject({
      enabled: true,
      daemonId: 'host-a',
      postgres: { url: 'postgres://u:secret@db:5432/agent', schema: 'agent', poolMax: 10 },
      claim: { maxConcurrentTicks: 64, pollMaxMs: 1000 },
      heartbeat: { intervalMs: 5000, staleAfterMs: 15000 },
      chat: { partitions: 32, ownerTtlMs: 15000, ackWaitMs: 30000 },
    });
  });

  it('reads the chat settings in ms and refuses a TTL under 3 s at its key', () => {
    const ok = pool.make({
      ...baseFiles(),
      'cluster.yaml':
        'postgres: { url: "postgres://x" }\nchat:\n  partitions: 8\n  owner_ttl_secs: 6\n  ack_wait_secs: 10\n',
    });
    expect(clusterOf(load(ok).snapshot!)?.chat).toEqual({
      partitions: 8,
      ownerTtlMs: 6000,
      ackWaitMs: 10000,
    });
    const bad = pool.make({
      ...baseFiles(),
      'cluster.yaml': 'postgres: { url: "postgres://x" }\nchat:\n  owner_ttl_secs: 1\n',
    });
    const issue = load(bad).errors.find((i) => i.section === 'cluster')!;
    expect(issue).toMatchObject({ path: 'chat.owner_ttl_secs', line: 3 });
  });

  it('enabled: false is single-host mode', () => {
    const d = pool.make({
      ...baseFiles(),
      'cluster.yaml': 'enabled: false\npostgres: { url: "postgres://x" }\n',
    });
    expect(clusterOf(load(d).snapshot!)).toBeNull();
  });

  it('a wrong field is a located issue naming the file', () => {
    const d = pool.make({
      ...baseFiles(),
      'cluster.yaml': 'daemon_id: a\npostgres:\n  url: postgres://x\n  pool_max: many\n',
    });
    const r = load(d);
    const issue = r.errors.find((i) => i.section === 'cluster')!;
    expect(issue).toMatchObject({ file: join(d.config, 'cluster.yaml'), path: 'postgres.pool_max', line: 4 });
    expect(r.snapshot?.sections.get('cluster') ?? null).toBeNull();
  });

  it('a window shorter than three heartbeats is refused at its key', () => {
    const d = pool.make({
      ...baseFiles(),
      'cluster.yaml':
        'postgres: { url: "postgres://x" }\nheartbeat:\n  interval_secs: 5\n  stale_after_secs: 10\n',
    });
    const issue = load(d).errors.find((i) => i.code === 'CLUSTER_BAD_WINDOW')!;
    expect(issue).toMatchObject({ path: 'heartbeat.stale_after_secs', line: 4 });
    expect(issue.hint).toContain('at least 15');
  });

  it('cluster mode with the local broker names both files and the fix', () => {
    const d = pool.make({
      ...baseFiles(),
      'cluster.yaml': 'enabled: true\npostgres: { url: "postgres://x" }\n',
    });
    const r = load(d);
    const brokerFile = join(d.config, 'broker.yaml');
    const [issue] = clusterBrokerIssues(clusterOf(r.snapshot!), r.snapshot!.broker, brokerFile);
    expect(issue).toMatchObject({
      code: 'CLUSTER_NEEDS_NATS',
      severity: 'error',
      file: join(d.config, 'cluster.yaml'),
      line: 1,
    });
    expect(issue!.message).toContain(brokerFile);
    expect(issue!.hint).toContain('kind: nats');
    expect(clusterBrokerIssues(clusterOf(r.snapshot!), { kind: 'nats' }, brokerFile)).toEqual([]);
    expect(clusterBrokerIssues(null, { kind: 'local' }, brokerFile)).toEqual([]);
  });

  it('any change of the settings is a change (restart required)', () => {
    const d = pool.make({ ...baseFiles(), 'cluster.yaml': 'postgres: { url: "postgres://x" }\n' });
    const a = clusterOf(load(d).snapshot!);
    d.write('cluster.yaml', '\n\npostgres: { url: "postgres://x" }\n');
    expect(clusterSettingsChanged(a, clusterOf(load(d).snapshot!))).toBe(false);
    d.write('cluster.yaml', 'postgres: { url: "postgres://x", pool_max: 4 }\n');
    expect(clusterSettingsChanged(a, clusterOf(load(d).snapshot!))).toBe(true);
    expect(clusterSettingsChanged(a, null)).toBe(true);
  });
});
