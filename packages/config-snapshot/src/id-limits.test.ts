// Ids and names are bounded: a too-long or ill-formed one is rejected, located, without flooding the message,
// and everything next to it still loads.
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type LoadResult } from './config.js';
import { formatIssue, type ConfigIssue } from './issues.js';
import { ID_LIMITS } from './schemas.js';
import { agentYaml, baseFiles, tempConfig, type TempDir } from './testing.js';

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
  }
}

describe('id and name limits', () => {
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
});
