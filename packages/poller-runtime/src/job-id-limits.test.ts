// Job ids and envelope names are bounded: a too-long or ill-formed one rejects its job alone, located,
// without flooding the message, and everything next to it still loads.
import { formatIssue, loadConfig, type ConfigIssue } from '@agent/config-snapshot';
import { baseFiles, tempConfig, type TempDir } from '@agent/config-snapshot/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { JOB_ID_MAX_LENGTH } from './pollers-schema.js';
import { pollersOf, pollersSectionReader } from './pollers-section.js';

let dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

function load(files: Record<string, string>) {
  const d = tempConfig(files);
  dirs.push(d);
  return loadConfig(d.config, {
    cwd: d.root,
    env: {},
    channels: ['log'],
    sections: [pollersSectionReader()],
  });
}

const HUGE = 'x'.repeat(1024 * 1024);

/** No issue repeats a long run of the offending value: each stays a readable line. */
function bounded(issues: ConfigIssue[]): void {
  for (const i of issues) {
    const line = formatIssue(i);
    expect(line.length, line.slice(0, 200)).toBeLessThan(400);
    expect(i.jobId?.length ?? 0).toBeLessThanOrEqual(JOB_ID_MAX_LENGTH);
  }
}

const job = (
  id: string,
  over: { kind?: string; agent?: string; to?: string; channel?: string; extra?: string } = {},
) =>
  `    - id: ${JSON.stringify(id)}\n      kind: ${over.kind ?? 'rss'}\n      agent: ${JSON.stringify(over.agent ?? 'a')}\n      schedule: { every_secs: 60 }\n      config:\n        feed_url: "https://example.org/feed"\n        message_template: "x"\n        deliver: { channel: ${JSON.stringify(over.channel ?? 'log')}, to: ${JSON.stringify(over.to ?? 'op')} }\n${over.extra ?? ''}`;

describe('job id and name limits', () => {
  it('job envelopes: each bad id, kind, agent, channel or recipient rejects its job alone, located', () => {
    const longest = `j${'1'.repeat(JOB_ID_MAX_LENGTH - 1)}`;
    const cases: [string, string, string, RegExp][] = [
      [job(HUGE), 'id', 'pollers.jobs[1].id', /^is 1048576 characters long; at most 128 are allowed$/],
      [job(`j${'1'.repeat(JOB_ID_MAX_LENGTH)}`), 'id', 'pollers.jobs[2].id', /^is 129 characters long/],
      [job('bad id!'), 'id', 'pollers.jobs[3].id', /^must match/],
      [job('k', { kind: `k${'x'.repeat(64)}` }), 'kind', 'pollers.jobs[4].kind', /at most 64 are allowed/],
      [job('ag', { agent: 'a'.repeat(65) }), 'agent', 'pollers.jobs[5].agent', /at most 64 are allowed/],
      [job('ag2', { agent: 'a b' }), 'agent', 'pollers.jobs[6].agent', /^must match/],
      [
        job('ch', { channel: HUGE }),
        'channel',
        'pollers.jobs[7].config.deliver.channel',
        /at most 64 are allowed/,
      ],
      [
        job('to', { to: 'o'.repeat(257) }),
        'to',
        'pollers.jobs[8].config.deliver.to',
        /at most 256 are allowed/,
      ],
      [
        job('nl', { to: 'op\nlevel=error msg=forged' }),
        'to',
        'pollers.jobs[9].config.deliver.to',
        /^must not contain control characters/,
      ],
      [
        job('ft', { extra: `      failure_to: { channel: log, to: ${JSON.stringify(HUGE)} }\n` }),
        'failure_to',
        'pollers.jobs[10].failure_to.to',
        /at most 256 are allowed/,
      ],
    ];
    const r = load({
      ...baseFiles(),
      'pollers.yaml': `pollers:\n  jobs:\n${job('ok')}${cases.map((c) => c[0]).join('')}${job(longest)}`,
    });
    const pollers = pollersOf(r.snapshot!)!;
    // The siblings load: the first job and the one whose id is exactly at the limit.
    expect(pollers.jobs.map((j) => j.spec.id)).toEqual(['ok', longest]);
    expect(pollers.rejected.map((x) => x.index)).toEqual(cases.map((_c, i) => i + 1));
    for (const [i, [, , path, message]] of cases.entries()) {
      const rejected = pollers.rejected[i]!;
      expect(rejected.issues.map((x) => x.path)).toContain(path);
      const issue = rejected.issues.find((x) => x.path === path)!;
      expect(issue.message).toMatch(message);
      expect(issue.line).toBeGreaterThan(0);
    }
    // An id too long to be valid names nothing: the entry is rejected by its index alone.
    expect(pollers.rejected[0]!.id).toBeUndefined();
    expect(pollers.rejected[1]!.id).toBeUndefined();
    expect(pollers.rejected[2]!.id).toBe('bad id!');
    bounded(r.errors);
  });
});
