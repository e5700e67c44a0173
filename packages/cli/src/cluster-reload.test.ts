import { describe, expect, it } from 'vitest';
import { clusterReloadReport, type ClusterReloadAck } from './cluster-reload.js';

const ack = (daemon: string, over: Partial<ClusterReloadAck> = {}): ClusterReloadAck => ({
  request_id: 'r',
  version: 12,
  daemon_id: daemon,
  host: `${daemon}.lan`,
  config_version: 12,
  config_hash: '9f3c1a2b77aa',
  applied: ['assistant'],
  rejected: [],
  rejected_jobs: [],
  errors: [],
  restart_required: [],
  elapsed_ms: 30,
  ...over,
});
const members = (...ids: string[]) => ids.map((daemonId) => ({ daemonId, lastHeartbeatAgoMs: 2000 }));
const report = (expected: string[], acks: ClusterReloadAck[]) =>
  clusterReloadReport({ expected: members(...expected), acks, timeoutMs: 5000 });

describe('cluster reload report', () => {
  it('every member applied the same config: one line per daemon, exit 0', () => {
    expect(report(['a', 'b', 'c'], [ack('a'), ack('b', { elapsed_ms: 41 }), ack('c')])).toEqual({
      exitCode: 0,
      lines: [
        'reload v12: applied=1 rejected=0 elapsed=41ms',
        '  ✓ assistant',
        'daemons 3/3 answered:',
        '  ✓ a (a.lan): config v12 hash 9f3c1a2b applied=1 rejected=0 elapsed=30ms',
        '  ✓ b (b.lan): config v12 hash 9f3c1a2b applied=1 rejected=0 elapsed=41ms',
        '  ✓ c (c.lan): config v12 hash 9f3c1a2b applied=1 rejected=0 elapsed=30ms',
      ],
    });
  });

  it('a silent member is named with its last heartbeat: exit 3', () => {
    const r = report(['a', 'b', 'c'], [ack('a'), ack('b')]);
    expect(r.exitCode).toBe(3);
    expect(r.lines).toContain('daemons 2/3 answered:');
    expect(r.lines.at(-1)).toBe('  ✗ c: no ack within 5 s (last heartbeat 2 s ago)');
  });

  const cases: [string, ClusterReloadAck[], number, string][] = [
    ['another config version: exit 3', [ack('a'), ack('b', { config_version: 11 })], 3, 'reload v11/v12:'],
    ['another hash: exit 3', [ack('a'), ack('b', { config_hash: 'ffff0000' })], 3, 'reload v12:'],
    [
      'another set of applied agents: exit 3',
      [ack('a'), ack('b', { applied: [] })],
      3,
      'reload v12: applied=0',
    ],
    [
      'the same rejection everywhere: exit 2',
      [
        ack('a', { rejected: [{ agent_id: 'x', reason: 'bad' }] }),
        ack('b', { rejected: [{ agent_id: 'x', reason: 'bad' }] }),
      ],
      2,
      'reload v12: applied=1 rejected=1',
    ],
  ];
  it.each(cases)('%s', (_name, acks, exitCode, header) => {
    const r = report(['a', 'b'], acks);
    expect(r.exitCode).toBe(exitCode);
    expect(r.lines[0]!.startsWith(header)).toBe(true);
    if (exitCode === 3)
      expect(r.lines.some((l) => l.includes('≠ b') && l.endsWith('(differs from the others)'))).toBe(true);
  });

  it('rejected is the union, applied the intersection', () => {
    const r = report(
      ['a', 'b'],
      [
        ack('a', { applied: ['assistant', 'helper'], rejected: [{ agent_id: 'x', reason: 'bad' }] }),
        ack('b', { applied: ['assistant'], rejected: [{ agent_id: 'helper', reason: 'no provider' }] }),
      ],
    );
    expect(r.lines.slice(0, 4)).toEqual([
      'reload v12: applied=1 rejected=2 elapsed=30ms',
      '  ✓ assistant',
      '  ✗ x: bad',
      '  ✗ helper: no provider',
    ]);
  });

  it('no ack at all: exit 1 as today, every member named', () => {
    expect(report(['a', 'b'], [])).toEqual({
      exitCode: 1,
      lines: [
        'reload: no ack from any of 2 daemons within 5 s',
        '  ✗ a: no ack within 5 s (last heartbeat 2 s ago)',
        '  ✗ b: no ack within 5 s (last heartbeat 2 s ago)',
      ],
    });
  });

  it('a daemon that joined after the member list answered counts as answering', () => {
    const r = report(['a'], [ack('a'), ack('d')]);
    expect(r.exitCode).toBe(0);
    expect(r.lines).toContain('daemons 2/2 answered:');
  });
});
