// Cluster mode's control plane through real daemons on the real PostgreSQL and NATS: the config bundle pushed
// by `agent config push` is what every daemon runs (its version is the snapshot version), a newer bundle is
// applied at the next heartbeat, `agent reload` reports every daemon and exits 3 when one does not answer,
// `agent cluster status` shows the members, and a start without a bundle or without NATS is refused.
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  agentFile,
  baseConfig,
  daemonScope,
  runCli,
  SLOW_WATCHER,
  type Workdir,
  dropInboundStream,
} from './harness.js';

const scope = daemonScope();
afterAll(dropInboundStream);
let db: ScratchSchema;
beforeEach(async () => {
  db = await scratchSchema('cl');
});
afterEach(() => db.drop());

const clusterYaml = (id: string) =>
  `daemon_id: ${id}\npostgres:\n  url: ${db.url}\n  schema: ${db.schema}\n  pool_max: 3\nheartbeat:\n  interval_secs: 1\n  stale_after_secs: 3\n`;

/** Host A holds the whole config; host B only its host-local files (cluster, broker, runtime). */
function hosts(): { a: Workdir; b: Workdir } {
  const full = baseConfig({ broker: 'nats', runtime: SLOW_WATCHER });
  const a = scope.workdir({ ...full, 'cluster.yaml': clusterYaml('host-a') });
  const b = scope.workdir({
    'broker.yaml': full['broker.yaml']!,
    'runtime.yaml': SLOW_WATCHER,
    'cluster.yaml': clusterYaml('host-b'),
  });
  return { a, b };
}

const cli = (w: Workdir, ...args: string[]) => runCli(w, [...args, '--config-dir', 'config']);

describe('cluster mode: one config for every daemon', () => {
  it('runs the pushed bundle everywhere, converges on a newer one, and reloads every daemon with one report', async () => {
    const { a, b } = hosts();
    const refused = await cli(b);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/PostgreSQL holds no config bundle yet; run `agent config push/);

    const pushed = await cli(a, 'config', 'push');
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stdout).toMatch(/^config v1 pushed \(3 files, hash [0-9a-f]{12}\)/m);
    expect((await cli(a, 'config', 'push')).stdout).toMatch(/^config v1 unchanged/m);

    const da = await scope.start(a);
    const dbb = await scope.start(b);
    // Host B has no agent file of its own: its agent comes from the bundle.
    expect(dbb.lines.join('\n')).toMatch(/msg="daemon started" version=1 .*agents=a /);

    const all = await cli(a, 'reload');
    expect(all.code, all.stdout + all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^daemons 2\/2 answered/m);
    expect(all.stdout).toMatch(/✓ host-a .*config v1/);
    expect(all.stdout).toMatch(/✓ host-b .*config v1/);

    a.write('agents.d/a.yaml', agentFile('hello again'));
    expect((await cli(a, 'config', 'push')).stdout).toMatch(/^config v2 pushed/m);
    // No doorbell: each daemon sees the desired version at its next heartbeat (1 s here).
    await da.waitFor(/msg="config reload applied" version=2 /, 8000);
    await dbb.waitFor(/msg="config reload applied" version=2 /, 8000);
    expect(await dbb.metric('agent_config_applied_version')).toBe(2);

    const status = await runCli(b, ['cluster', 'status', '--json', '--admin-url', dbb.adminUrl]);
    expect(status.code, status.stdout + status.stderr).toBe(0);
    const view = JSON.parse(status.stdout);
    expect(view.desired_config_version).toBe(2);
    expect(view.members.map((m: { daemon_id: string }) => m.daemon_id).sort()).toEqual(['host-a', 'host-b']);
    expect(
      view.members.every((m: { applied_config_version: number }) => m.applied_config_version === 2),
    ).toBe(true);

    // A daemon that cannot answer (stopped) is named, and the exit code says the cluster disagrees.
    dbb.proc.kill('SIGSTOP');
    try {
      const partial = await cli(a, 'reload');
      expect(partial.code, partial.stdout).toBe(3);
      expect(partial.stdout).toMatch(/✗ host-b: no ack within 5 s/);
    } finally {
      dbb.proc.kill('SIGCONT');
    }
  }, 60_000);

  it('refuses cluster mode on the local broker, in the check and at start', async () => {
    const w = scope.workdir({
      ...baseConfig({ runtime: SLOW_WATCHER }),
      'cluster.yaml': clusterYaml('solo'),
    });
    const check = await cli(w, '--check-config');
    expect(check.code).toBe(1);
    const start = await cli(w);
    expect(start.code).toBe(1);
    for (const out of [check.stdout + check.stderr, start.stderr])
      expect(out).toMatch(
        /cluster mode is enabled here but config\/broker\.yaml has kind \\?"local\\?".*\[CLUSTER_NEEDS_NATS\]/,
      );
  });
});
