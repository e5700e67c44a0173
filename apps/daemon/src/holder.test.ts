import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { holderId, holderIsGone, parseHolder, processStartTime, type ProcessProbe } from './holder.js';

const probe = (alive: Record<number, string>): ProcessProbe => ({
  host: 'h1',
  alive: (pid) => pid in alive,
  startTime: (pid) => alive[pid] ?? null,
});

describe('lease holder ids', () => {
  it('carry host, pid and the process start time', () => {
    const id = holderId();
    expect(parseHolder(id)).toEqual({
      host: hostname(),
      pid: process.pid,
      start: processStartTime(process.pid),
    });
    expect(processStartTime(process.pid)).toMatch(/^[0-9a-f]{1,8}\.\d+$/);
    expect(parseHolder('my:host:12:345:abcd')).toEqual({ host: 'my:host', pid: 12, start: '345' });
    expect(parseHolder('host:7:ab12')).toBeNull();
    expect(parseHolder('host:x:1:ab12')).toBeNull();
  });

  const table: [string, string, Record<number, string>, boolean][] = [
    ['pid gone', 'h1:10:500:r', {}, true],
    ['pid reused by a later process', 'h1:10:500:r', { 10: '900' }, true],
    ['same process still running', 'h1:10:500:r', { 10: '500' }, false],
    ['start time unknown, pid alive', 'h1:10:-:r', { 10: '500' }, false],
    ['start time unknown, pid gone', 'h1:10:-:r', {}, true],
    ['another host is never judged', 'h2:10:500:r', {}, false],
    ['an older id format is never judged', 'h1:10:r', {}, false],
  ];
  it.each(table)('%s', (_name, id, alive, gone) => {
    expect(holderIsGone(id, probe(alive))).toBe(gone);
  });

  it('judges real processes: this one lives, a finished child is gone', async () => {
    expect(holderIsGone(holderId())).toBe(false);
    const { spawnSync } = await import('node:child_process');
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    expect(holderIsGone(`${hostname()}:${child.stdout.toString()}:1:r`)).toBe(true);
  });
});
