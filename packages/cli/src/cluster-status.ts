/**
 * `agent cluster status`: members, their config versions, leases and inbound chat partitions, the leader, and
 * the daemon polling each single-consumer channel instance. Pure formatting.
 */
import type { AdminClusterStatus } from '@agent/admin-api';
import { alignTable } from './format.js';
import { paint } from './io.js';

/** `GET /admin/cluster` as the CLI reads it: the admin API's own wire type. */
export type ClusterStatusView = AdminClusterStatus;

function age(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms ago`;
  if (ms < 120_000) return `${Math.round(ms / 1000)}s ago`;
  return `${Math.round(ms / 60_000)}m ago`;
}

export function formatClusterStatus(view: ClusterStatusView, color = false): string[] {
  const desired = view.desired_config_version;
  const rows = [
    ['DAEMON', 'HOST', 'STATE', 'SEEN', 'VERSION', 'CONFIG', 'JOBS', 'PARTITIONS', 'TICKS', 'LEADER'],
  ];
  for (const m of view.members) {
    const state =
      m.state === 'live'
        ? paint.green('live', color)
        : m.state === 'stale'
          ? paint.red('stale', color)
          : 'left';
    const applied = m.applied_config_version;
    const config =
      applied === null ? '-' : `v${applied}${applied !== desired && m.state === 'live' ? ' (behind)' : ''}`;
    rows.push([
      m.daemon_id,
      m.host,
      state,
      age(m.seen_ago_ms),
      m.version,
      config,
      m.jobs_held === null ? '-' : String(m.jobs_held),
      m.inbound_partitions === null ? '-' : String(m.inbound_partitions),
      String(m.ticks_in_flight),
      view.leader?.daemon_id === m.daemon_id ? `yes (term ${view.leader.term})` : '',
    ]);
  }
  const live = view.members.filter((m) => m.state === 'live').length;
  const leader = view.leader ? `${view.leader.daemon_id} (term ${view.leader.term})` : 'none';
  return [
    `cluster: ${live} live of ${view.members.length} members, desired config v${desired}, leader ${leader}`,
    ...alignTable(rows),
    ...channelOwnerLines(view.channel_owners),
  ];
}

/**
 * Always shown, so that `none` (no daemon polls any bot now: none is configured, or one is between owners)
 * is told apart from a daemon that cannot tell.
 */
function channelOwnerLines(owners: ClusterStatusView['channel_owners']): string[] {
  if (owners === null) return ['channel owners: unknown (the daemon could not read them)'];
  if (owners.length === 0) return ['channel owners: none'];
  const rows = owners.map((o) => [`${o.plugin}/${o.instance}`, o.daemon_id, `term ${o.term}`]);
  return ['channel owners:', ...alignTable(rows).map((l) => `  ${l}`)];
}
