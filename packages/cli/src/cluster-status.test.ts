import { describe, expect, it } from 'vitest';
import { formatClusterStatus, type ClusterStatusView } from './cluster-status.js';

type MemberView = ClusterStatusView['members'][number];

const member = (daemonId: string, over: Partial<MemberView> = {}): MemberView => ({
  daemon_id: daemonId,
  host: `${daemonId}.lan`,
  version: '1.4.0',
  state: 'live',
  seen_ago_ms: 1200,
  applied_config_version: 12,
  applied_config_hash: 'h',
  ticks_in_flight: 0,
  jobs_held: 0,
  inbound_partitions: 0,
  ...over,
});

const view = (over: Partial<ClusterStatusView> = {}): ClusterStatusView => ({
  desired_config_version: 12,
  leader: { daemon_id: 'a', term: 3 },
  members: [member('a')],
  channel_owners: [],
  ...over,
});

describe('cluster status', () => {
  it('one row per member with state, config, jobs, partitions and the leader; then the channel owners', () => {
    const lines = formatClusterStatus(
      view({
        members: [
          member('a', { ticks_in_flight: 2, jobs_held: 40, inbound_partitions: 16 }),
          member('b', {
            seen_ago_ms: 300,
            applied_config_version: 11,
            applied_config_hash: 'g',
            jobs_held: null,
            inbound_partitions: null,
          }),
          member('c', {
            version: '1.3.9',
            state: 'stale',
            seen_ago_ms: 200_000,
            applied_config_version: null,
            applied_config_hash: null,
          }),
        ],
        channel_owners: [
          { plugin: 'chat_b', instance: 'main', daemon_id: 'a', term: 3, expires_in_ms: 12_000 },
          { plugin: 'chat_b', instance: 'support-desk', daemon_id: 'b', term: 14, expires_in_ms: 9_000 },
        ],
      }),
    );
    expect(lines).toEqual([
      'cluster: 2 live of 3 members, desired config v12, leader a (term 3)',
      'DAEMON  HOST   STATE  SEEN       VERSION  CONFIG        JOBS  PARTITIONS  TICKS  LEADER',
      'a       a.lan  live   1s ago     1.4.0    v12           40    16          2      yes (term 3)',
      'b       b.lan  live   300ms ago  1.4.0    v11 (behind)  -     -           0',
      'c       c.lan  stale  3m ago     1.3.9    -             0     0           0',
      'channel owners:',
      '  chat_b/main          a  term 3',
      '  chat_b/support-desk  b  term 14',
    ]);
  });

  it.each([
    ['no daemon polls a bot now', [], 'channel owners: none'],
    ['the daemon cannot tell', null, 'channel owners: unknown (the daemon could not read them)'],
  ] as const)('%s: one line says so', (_name, owners, line) => {
    const lines = formatClusterStatus(view({ channel_owners: owners === null ? null : [...owners] }));
    expect(lines.slice(2)).toEqual([
      'a       a.lan  live   1s ago  1.4.0    v12     0     0           0      yes (term 3)',
      line,
    ]);
  });
});
