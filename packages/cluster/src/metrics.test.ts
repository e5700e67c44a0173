import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createClusterMetrics } from './metrics.js';

describe('cluster metrics', () => {
  it('exports members, leader and applied version on the injected registry, once per registry', async () => {
    const registry = new Registry();
    const m = createClusterMetrics(registry);
    createClusterMetrics(registry).members(1);
    m.members(3);
    m.leader('host-a', true);
    m.appliedVersion(12);
    const text = await registry.metrics();
    expect(text).toContain('agent_cluster_members 3');
    expect(text).toContain('agent_cluster_leader{daemon_id="host-a"} 1');
    expect(text).toContain('agent_config_applied_version 12');
    m.leader('host-a', false);
    expect(await registry.metrics()).toContain('agent_cluster_leader{daemon_id="host-a"} 0');
  });
});
