import type { AdminJobDetail } from '@agent/admin-api';
import { describe, expect, it } from 'vitest';
import { listenToUrl } from './admin-client.js';
import {
  alignTable,
  formatJobDetail,
  formatJobTable,
  formatReloadPlan,
  formatRunResult,
  formatTime,
  formatValue,
} from './format.js';
import { workspaceRestart, workspaceRestartLine } from '../test/restart-required.js';

const job: AdminJobDetail = {
  id: 'j1',
  kind: 'rss',
  agent: 'a',
  schedule: 'every 60s',
  paused: false,
  breaker: 'open',
  consecutive_errors: 5,
  last_status: 'transient',
  last_error: 'HTTP 503',
  last_run_at: '2026-01-01T00:00:00.000Z',
  next_run_at: null,
  config: { feed_url: 'https://x.example/feed', tags: ['a', 'b'], nested: { on: true }, empty: [] },
  deliver: { channel: 'chat_a', to: 'u1' },
  failure_to: null,
  cursor: { present: true, bytes: 40 },
  seen_ids: 3,
  baselined: true,
  last_failure_alert_at: null,
  lease: { holder: 'host:1:x', epoch: 7, expires_at: '2026-01-01T00:01:00.000Z' },
};

describe('formatting', () => {
  it('aligns columns by visible width, colour codes excluded', () => {
    expect(
      alignTable([
        ['a', 'bb', 'c'],
        ['\x1b[31mxxx\x1b[39m', 'y', ''],
      ]),
    ).toEqual(['a    bb  c', '\x1b[31mxxx\x1b[39m  y']);
  });

  it('prints times in UTC without milliseconds, "-" for none', () => {
    expect(formatTime('2026-01-01T10:20:30.456Z')).toBe('2026-01-01 10:20:30Z');
    expect(formatTime(null)).toBe('-');
  });

  it('colours only when asked: open breaker and failed status red, paused yellow', () => {
    const plain = formatJobTable([job]);
    expect(plain.join('\n')).not.toContain('\x1b[');
    const coloured = formatJobTable([{ ...job, paused: true }], true)[1]!;
    expect(coloured).toContain('\x1b[31mopen\x1b[39m');
    expect(coloured).toContain('\x1b[31mtransient\x1b[39m');
    expect(coloured).toContain('\x1b[33myes\x1b[39m');
  });

  it('a single host lists no HOLDER column; a cluster daemon names the daemon holding each job, - when free', () => {
    const single = formatJobTable([job]);
    expect(single[0]).not.toContain('HOLDER');
    expect(single[0]).toMatch(/LAST STATUS +ERRORS$/);
    const cluster = formatJobTable([
      { ...job, holder: 'host-a#4242.9f3c1a2b', lease_expires_at: '2026-01-01T00:01:00.000Z' },
      { ...job, id: 'j2', holder: null, lease_expires_at: null },
    ]);
    expect(cluster[0]).toMatch(/ERRORS +HOLDER$/);
    expect(cluster[1]).toMatch(/^j1 .* 5 +host-a$/);
    expect(cluster[2]).toMatch(/^j2 .* 5 +-$/);
  });

  it('show names the cluster lease holder and when its lease expires', () => {
    const lines = formatJobDetail({
      ...job,
      holder: 'host-a#4242.9f3c1a2b',
      lease_expires_at: '2026-01-01T00:01:00.000Z',
      lease: { holder: 'host-a#4242.9f3c1a2b', epoch: 7, expires_at: '2026-01-01T00:01:00.000Z' },
    });
    expect(lines).toContain('lease holder: host-a#4242.9f3c1a2b (epoch 7, expires 2026-01-01 00:01:00Z)');
  });

  it('says so when no job is loaded', () => {
    expect(formatJobTable([])).toEqual(['no poller jobs are loaded']);
  });

  it('show includes the lease holder and the config', () => {
    const lines = formatJobDetail(job);
    expect(lines).toContain('lease holder: host:1:x (epoch 7, expires 2026-01-01 00:01:00Z)');
    expect(lines).toContain('breaker:      open (5 consecutive errors)');
    expect(lines.slice(lines.indexOf('config:'))).toEqual([
      'config:',
      '  feed_url: https://x.example/feed',
      '  tags:',
      '    - a',
      '    - b',
      '  nested:',
      '    on: true',
      '  empty: []',
    ]);
  });

  it('show prints a released lease as none, never its past expiry', () => {
    const lines = formatJobDetail({
      ...job,
      lease: { holder: null, epoch: 6, expires_at: '2026-01-01T00:00:16.000Z' },
    });
    expect(lines).toContain('lease holder: none (last epoch 6)');
    expect(lines.join('\n')).not.toContain('00:00:16');
    expect(formatJobDetail({ ...job, lease: null })).toContain('lease holder: none');
  });

  it('quotes strings that would read as another type', () => {
    expect(formatValue({ a: 'true', b: '10', c: 'x: y', d: '' })).toEqual([
      'a: "true"',
      'b: "10"',
      'c: "x: y"',
      'd: ""',
    ]);
  });

  it('run and reload lines', () => {
    expect(
      formatRunResult('j1', { status: 'permanent', items_seen: 0, items_dispatched: 0, error: 'HTTP 401' }),
    ).toEqual(['run j1: permanent, 0 new item(s) seen, 0 delivered', '  error: HTTP 401']);
    expect(
      formatReloadPlan({
        add: [],
        replace: [],
        remove: [],
        keep: ['x'],
        rejected: [{ id: 'y', errors: ['e1', 'e2'] }],
      }),
    ).toEqual(['pollers reload: add=0 replace=0 remove=0 keep=1 rejected=1', '  ✗ y: e1', '      e2']);
  });

  it('a reload plan names a rejected running job, and every file it could not apply', () => {
    expect(
      formatReloadPlan({
        add: [],
        replace: [],
        remove: [],
        keep: ['x', 'y'],
        rejected: [{ id: 'y', errors: ['pollers.yaml:9:7 kind: bad'] }],
        errors: ['config/pollers.yaml:19:52: YAML syntax error'],
      }),
    ).toEqual([
      'pollers reload: add=0 replace=0 remove=0 keep=2 rejected=2',
      '  ✗ y: pollers.yaml:9:7 kind: bad (its previous definition keeps running)',
      '  ✗ config/pollers.yaml:19:52: YAML syntax error',
    ]);
  });

  it('a reload plan (or its preview) names the agents applied, rejected and needing a restart', () => {
    expect(
      formatReloadPlan({
        add: ['new'],
        replace: [],
        remove: [],
        keep: [],
        rejected: [],
        dry_run: true,
        version: 2,
        agents: {
          applied: ['a'],
          rejected: [{ agent_id: 'c', reason: 'config/agents.d/c.yaml:11:5 bogus: unknown key "bogus"' }],
          restart_required: [workspaceRestart, { field: 'broker.yaml url' }],
        },
      }),
    ).toEqual([
      'pollers reload preview (nothing applied): add=1 replace=0 remove=0 keep=0 rejected=0',
      '  + new',
      '  ✓ agent a',
      '  ✗ agent c: config/agents.d/c.yaml:11:5 bogus: unknown key "bogus"',
      workspaceRestartLine,
      '  ! restart required: broker.yaml url',
    ]);
  });

  it('list marks a job running a stale definition and names every rejected job after the table', () => {
    const lines = formatJobTable(
      [{ ...job, definition: 'stale', definition_error: 'x.yaml:1:1 bad' }],
      false,
      [
        { id: job.id, errors: ['x.yaml:1:1 bad'], running: true },
        { id: 'fresh', errors: ['x.yaml:9:1 agent: no', 'x.yaml:9:9 kind: no'], running: false },
      ],
    );
    expect(lines[1]!.startsWith(`${job.id} (stale)  `)).toBe(true);
    expect(lines.slice(2)).toEqual([
      '',
      `✗ ${job.id}: runs its previous definition; pollers.yaml entry rejected: x.yaml:1:1 bad`,
      '✗ fresh: rejected, not running: x.yaml:9:1 agent: no (+1 more: agent pollers reload lists them)',
    ]);
    expect(formatJobDetail({ ...job, definition: 'stale', definition_error: 'x.yaml:1:1 bad' })).toContain(
      'definition:   stale: x.yaml:1:1 bad',
    );
  });

  it('turns admin.listen into a URL', () => {
    expect(listenToUrl('127.0.0.1:9091')).toBe('http://127.0.0.1:9091');
    expect(listenToUrl('[::1]:9091')).toBe('http://[::1]:9091');
    expect(() => listenToUrl('9091')).toThrow(/host:port/);
  });
});
