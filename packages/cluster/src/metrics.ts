/**
 * The cluster's series, on an injected prom-client `Registry` (never the global one). Each daemon exports
 * its own view; `agent_cluster_leader` is 1 on the one daemon that holds the term, so the sum over the
 * cluster is 1 while a leader exists.
 */
import { Gauge } from '@agent/metrics-text';
import type { Registry } from 'prom-client';

export interface ClusterMetrics {
  /** Live members as this daemon saw them at its last heartbeat. */
  members(n: number): void;
  /** Whether this daemon (`daemonId`) is the leader now. */
  leader(daemonId: string, isLeader: boolean): void;
  /** The config bundle version this daemon runs. */
  appliedVersion(version: number): void;
}

function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: L[] = []) {
  return (
    (registry.getSingleMetric(name) as Gauge<L> | undefined) ??
    new Gauge<L>({ name, help, labelNames, registers: [registry] })
  );
}

export function createClusterMetrics(registry: Registry): ClusterMetrics {
  const members = gauge(
    registry,
    'agent_cluster_members',
    'Live members of the cluster (this daemon included).',
  );
  const leader = gauge(
    registry,
    'agent_cluster_leader',
    '1 while this daemon holds the leader term (per-job gauges are exported by it), else 0.',
    ['daemon_id'],
  );
  const applied = gauge(
    registry,
    'agent_config_applied_version',
    'Config bundle version this daemon runs; versions that differ across daemons for long mean a stuck reload.',
  );
  return {
    members: (n) => members.set(n),
    leader: (daemonId, isLeader) => leader.set({ daemon_id: daemonId }, isLeader ? 1 : 0),
    appliedVersion: (v) => applied.set(v),
  };
}
