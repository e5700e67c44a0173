// Ids and names are bounded: a too-long or ill-formed one is rejected, located, without flooding the message,
// and everything next to it still loads.
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type LoadResult } from './config.js';
import { formatIssue, type ConfigIssue } from './issues.js';
import { ID_LIMITS } from './schemas.js';
import { agentYaml, baseFiles, tempConfig, type TempDir } from './test-helpers.js';

let dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

function load(files: Record<string, string>): LoadResult {
  const d = tempConfig(files);
  dirs.push(d);
  return loadConfig(d.config, { cwd: d.root, env: {}, channels: ['log'] });
}

const HUGE = 'x'.repeat(1024 * 1024);

/** No issue repeats a long run of the offending value: each stays a readable line. */
function bounded(issues: ConfigIssue[]): void {
  for (const i of issues) {
    const line = formatIssue(i);
    expect(line.length, line.slice(0, 200)).toBeLessThan(400);
    expect(i.jobId?.length ?? 0).toBeLessThanOrEqual(ID_LIMITS.job);
  }
}

const job = (
  id: string,
  over: { kind?: string; agent?: string; to?: string; channel?: string; extra?: string } = {},
) =>
  `    - id: ${JSON.stringify(id)}\n      kind: ${over.kind ?? 'rss'}\n      agent: ${JSON.stringify(over.agent ?? 'a')}\n      schedule: { every_secs: 60 }\n      config:\n        feed_url: "https://example.org/feed"\n        message_template: "x"\n        deliver: { channel: ${JSON.stringify(over.channel ?? 'log')}, to: ${JSON.stringify(over.to ?? 'op')} }\n${over.extra ?? ''}`;

describe('id and name limits', () => {
  it('job envelopes: each bad id, kind, agent, channel or recipient rejects its job alone, located', () => {
    const longest = `j${'1'.repeat(ID_LIMITS.job - 1)}`;
    const cases: [string, string, string, RegExp][] = [
      [job(HUGE), 'id', 'pollers.jobs[1].id', /^is 1048576 characters long; at most 128 are allowed$/],
      [job(`j${'1'.repeat(ID_LIMITS.job)}`), 'id', 'pollers.jobs[2].id', /^is 129 characters long/],
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
    const pollers = r.snapshot!.pollers!;
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

  it('agent ids: a file name longer than 64 characters is refused; the agent at the limit and the others load', () => {
    const atLimit = `a${'1'.repeat(ID_LIMITS.agent - 1)}`;
    const tooLong = `${atLimit}2`;
    const r = load(baseFiles({ a: agentYaml(), [atLimit]: agentYaml(), [tooLong]: agentYaml() }));
    expect([...r.snapshot!.agents.keys()].sort()).toEqual([atLimit, 'a'].sort());
    const e = r.errors.find((x) => x.code === 'CONFIG_BAD_AGENT_ID')!;
    expect(e.file).toMatch(new RegExp(`agents\\.d/${tooLong}\\.yaml$`));
    expect(e.message).toBe(
      `agent id "${tooLong.slice(0, 40)}…" is 65 characters long; at most 64 are allowed`,
    );
    expect(r.rejected.map((x) => x.agentId)).toEqual([tooLong]);
  });

  it('provider, plugin instance and binding names: the bad one is refused at its key, its neighbours load', () => {
    const r = load({
      ...baseFiles({
        a: agentYaml(),
        b: agentYaml('', `  - plugin: log\n    instance: ${'i'.repeat(65)}\n`),
      }),
      'llm.yaml': `providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: key-one-1234\n  p${HUGE}:\n    type: openai\n    base_url: http://x/v1\n    api_key: key-two-1234\n`,
      'plugins/log.yaml': `instances:\n  default: {}\n  "bad name": {}\n  i${HUGE}: {}\n`,
    });
    expect(Object.keys(r.snapshot!.llm.providers)).toEqual(['main']);
    expect(Object.keys(r.snapshot!.plugins.get('log')!.instances)).toEqual(['default']);
    expect([...r.snapshot!.agents.keys()]).toEqual(['a']);
    const at = (file: string) =>
      r.errors.filter((e) => e.file.endsWith(file)).map((e) => [e.line, e.path, e.message]);
    expect(at('llm.yaml')).toEqual([
      [
        6,
        `providers["p${'x'.repeat(39)}…"]`,
        `name "p${'x'.repeat(39)}…" is 1048577 characters long; at most 64 are allowed`,
      ],
    ]);
    expect(at('plugins/log.yaml')).toEqual([
      [3, 'instances["bad name"]', 'name "bad name" must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$'],
      [
        4,
        `instances["i${'x'.repeat(39)}…"]`,
        `name "i${'x'.repeat(39)}…" is 1048577 characters long; at most 64 are allowed`,
      ],
    ]);
    expect(at('agents.d/b.yaml')).toEqual([
      [12, 'inbound_bindings[1].instance', 'is 65 characters long; at most 64 are allowed'],
    ]);
    bounded(r.errors);
  });

  it('legacy mail-poller names leave room for the legacy-mail- prefix within the job id limit', () => {
    const fits = 'n'.repeat(ID_LIMITS.job - 'legacy-mail-'.length);
    const r = load({
      ...baseFiles({ a: agentYaml('credentials:\n  mail: work\n') }),
      'plugins/mail.yaml': 'accounts:\n  work:\n    user: me@work.example\n',
      'plugins/mail-poller.yaml': `mail_poller:\n  notify: { channel: log, to: op }\n  template: "Mail: {snippet}"\n  jobs:\n    - name: ${fits}\n      account: work\n      query: a\n    - name: ${fits}n\n      account: work\n      query: b\n`,
    });
    const e = r.errors.find((x) => x.path === 'mail_poller.jobs[1].name')!;
    expect(e.message).toBe('is 117 characters long; at most 116 are allowed');
  });
});
