import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { changedPaths, diff } from './diff.js';
import { createSnapshotStore, SnapshotVersionError } from './store.js';
import { agentYaml, baseFiles, tempConfig, type TempDir } from './testing.js';

let dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

/** Loads `files`, edits one file, reloads: returns both results. */
function reloadAfter(
  files: Record<string, string>,
  edit: (d: TempDir) => void,
  env: Record<string, string> = {},
) {
  const d = tempConfig(files);
  dirs.push(d);
  const first = loadConfig(d.config, { cwd: d.root, env });
  expect(first.errors).toEqual([]);
  edit(d);
  const second = loadConfig(d.config, { cwd: d.root, env, previous: first.snapshot });
  return { d, first, second };
}

const agentWith = (find: string, repl: string): string => agentYaml().replace(find, () => repl);

describe('diff classifies each changed field', () => {
  const hot: [string, (d: TempDir) => void, string][] = [
    [
      'allowed_tools',
      (d) => d.write('agents.d/a.yaml', agentWith('allowed_tools: ["*"]', 'allowed_tools: [send_message]')),
      'inbound_bindings[0].allowed_tools',
    ],
    [
      'outbound_allowlist',
      (d) => d.write('agents.d/a.yaml', agentWith('log: [op]', 'log: [op, other]')),
      'inbound_bindings[0].outbound_allowlist.log',
    ],
    [
      'system_prompt_extra',
      (d) => d.write('agents.d/a.yaml', agentYaml('', '    system_prompt_extra: be brief\n')),
      'inbound_bindings[0].system_prompt_extra',
    ],
    [
      'system_prompt',
      (d) => d.write('agents.d/a.yaml', agentWith('system_prompt: hello', 'system_prompt: bye')),
      'system_prompt',
    ],
    ['model name', (d) => d.write('agents.d/a.yaml', agentWith('name: m1', 'name: m2')), 'model.name'],
    [
      'api_key',
      (d) =>
        d.write(
          'llm.yaml',
          'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key: key-two-5678\n',
        ),
      'llm.providers.main.api_key',
    ],
    [
      'base_url',
      (d) =>
        d.write(
          'llm.yaml',
          'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:2/v1\n    api_key: key-one-1234\n',
        ),
      'llm.providers.main.base_url',
    ],
  ];
  it.each(hot)('%s is hot and applied', (_name, edit, field) => {
    const { second } = reloadAfter(baseFiles(), edit);
    expect(second.diff!.agents[0]!.changes).toEqual([{ field, class: 'hot' }]);
    expect(second.restartRequired).toEqual([]);
    expect(second.applied).toEqual(['a']);
    expect(second.snapshot!.version).toBe(2);
    expect(second.snapshot!.agents.get('a')!.version).toBe(2);
  });

  const restartAgent: [string, string][] = [
    ['workspace', 'workspace: ./elsewhere/ws\n'],
    ['skills_dir', 'skills_dir: ./elsewhere/skills\n'],
    ['transcripts_dir', 'transcripts_dir: ./elsewhere/tr\n'],
  ];
  it.each(restartAgent)('%s needs a restart: reported, not applied, the rest applies', (field, line) => {
    const text = agentWith('system_prompt: hello', 'system_prompt: bye') + line;
    const { d, first, second } = reloadAfter(baseFiles(), (dir) => dir.write('agents.d/a.yaml', text));
    // Located at the changed key: the last line of the file.
    expect(second.restartRequired).toEqual([
      {
        agentId: 'a',
        field,
        reason: `the agent keeps its running ${field} until the daemon restarts`,
        file: join(d.config, 'agents.d', 'a.yaml'),
        line: text.split('\n').length - 1,
      },
    ]);
    const before = first.snapshot!.agents.get('a')!;
    const after = second.snapshot!.agents.get('a')!;
    expect(after.definition.system_prompt).toBe('bye');
    expect([after.workspace, after.skillsDir, after.transcriptsDir]).toEqual([
      before.workspace,
      before.skillsDir,
      before.transcriptsDir,
    ]);
    expect(after.definition[field as 'workspace']).toBeUndefined();
  });

  it('an agent added or removed needs a restart and is not applied', () => {
    const { d, second } = reloadAfter(baseFiles({ a: agentYaml(), b: agentYaml() }), (dir) => {
      dir.remove('agents.d/b.yaml');
      dir.write('agents.d/c.yaml', agentYaml());
    });
    // The whole file is the change: named, without a line.
    expect(second.restartRequired).toEqual([
      {
        agentId: 'b',
        field: 'agent removed',
        reason: 'the agent keeps running until the daemon restarts',
        file: join(d.config, 'agents.d', 'b.yaml'),
      },
      {
        agentId: 'c',
        field: 'agent added',
        reason: 'agents start with the daemon: this one runs after a restart',
        file: join(d.config, 'agents.d', 'c.yaml'),
      },
    ]);
    expect([...second.snapshot!.agents.keys()].sort()).toEqual(['a', 'b']);
    expect(second.snapshot!.agents.get('b')!.version).toBe(1);
    expect(second.applied).toEqual(['a']);
  });

  it('an invalid agent file is rejected, not removed: no restart, the old definition keeps running', () => {
    const { second } = reloadAfter(baseFiles({ a: agentYaml(), b: agentYaml() }), (d) =>
      d.write('agents.d/b.yaml', agentWith('inbound_bindings:', 'inbound_bindingz:')),
    );
    expect(second.restartRequired).toEqual([]);
    expect(second.diff!.agents.find((a) => a.agentId === 'b')).toEqual({
      agentId: 'b',
      status: 'rejected',
      changes: [],
    });
    expect(second.rejected.map((r) => r.agentId)).toEqual(['b']);
    expect(second.snapshot!.agents.get('b')!.version).toBe(1);
  });

  it('an agent invalid since boot applies at the reload that finds it valid, without a restart', () => {
    const d = tempConfig({ ...baseFiles({ a: agentYaml(), b: agentYaml() }) });
    dirs.push(d);
    d.write('agents.d/b.yaml', agentWith('inbound_bindings:', 'inbound_bindingz:'));
    const boot = loadConfig(d.config, { cwd: d.root, env: {} });
    expect([...boot.snapshot!.agents.keys()]).toEqual(['a']);
    expect([...boot.snapshot!.invalidAgents.keys()]).toEqual(['b']);
    d.write('agents.d/b.yaml', agentYaml());
    const fixed = loadConfig(d.config, { cwd: d.root, env: {}, previous: boot.snapshot });
    expect(fixed.restartRequired).toEqual([]);
    expect(fixed.applied).toEqual(['a', 'b']);
    expect(fixed.snapshot!.agents.get('b')!.version).toBe(2);
    expect(fixed.snapshot!.invalidAgents.size).toBe(0);
    expect(fixed.diff!.agents.find((x) => x.agentId === 'b')!.status).toBe('joined');
    // A file that appears only now is an added agent, as before.
    d.write('agents.d/c.yaml', agentYaml());
    const added = loadConfig(d.config, { cwd: d.root, env: {}, previous: fixed.snapshot });
    expect(added.restartRequired).toMatchObject([{ agentId: 'c', field: 'agent added' }]);
  });

  it('an agent still invalid at a later reload stays out, and a new invalid file is not remembered', () => {
    const d = tempConfig({ ...baseFiles({ a: agentYaml(), b: agentYaml() }) });
    dirs.push(d);
    d.write('agents.d/b.yaml', 'model: [broken');
    const boot = loadConfig(d.config, { cwd: d.root, env: {} });
    d.write('agents.d/c.yaml', 'model: [broken');
    const second = loadConfig(d.config, { cwd: d.root, env: {}, previous: boot.snapshot });
    expect([...second.snapshot!.invalidAgents.keys()]).toEqual(['b']);
    expect(second.rejected.map((r) => r.agentId)).toEqual(['b', 'c']);
    expect(second.restartRequired).toEqual([]);
  });

  // Each edit with the fields it changes and the line of each in the edited file.
  const restartGlobal: [string, (d: TempDir) => void, string, [string, number][], string][] = [
    [
      'broker.yaml',
      (d) => d.write('broker.yaml', 'kind: nats\nurl: nats://127.0.0.1:4222\n'),
      'broker.yaml',
      [
        ['broker.yaml kind', 1],
        ['broker.yaml url', 2],
      ],
      'broker.yaml is read at start: the running settings stay until the daemon restarts',
    ],
    [
      'memory.yaml',
      (d) => d.write('memory.yaml', 'max_messages: 5\n'),
      'memory.yaml',
      [['memory.yaml max_messages', 1]],
      'memory.yaml is read at start: the running settings stay until the daemon restarts',
    ],
    [
      'plugin instance block',
      (d) => d.write('plugins/log.yaml', 'instances:\n  default: {}\n  second: {}\n'),
      'plugins/log.yaml',
      [['plugins/log.yaml instances.second', 3]],
      'channel instances start with the daemon: the running block stays until it restarts',
    ],
    [
      'metrics listener',
      (d) => d.write('runtime.yaml', 'log:\n  level: info\nmetrics:\n  listen: 127.0.0.1:9999\n'),
      'runtime.yaml',
      [['runtime.yaml metrics.listen', 4]],
      'listeners and the data directory are set up at start: the running ones stay until the daemon restarts',
    ],
  ];
  it.each(restartGlobal)(
    '%s needs a restart and keeps running as it was',
    (_name, edit, rel, fields, reason) => {
      const { d, first, second } = reloadAfter(baseFiles(), edit);
      expect(second.restartRequired).toEqual(
        fields.map(([field, line]) => ({ field, reason, file: join(d.config, rel), line })),
      );
      expect(second.snapshot!.broker).toEqual(first.snapshot!.broker);
      expect(second.snapshot!.memory).toEqual(first.snapshot!.memory);
      expect(second.snapshot!.runtime.metrics).toEqual(first.snapshot!.runtime.metrics);
      expect(Object.keys(second.snapshot!.plugins.get('log')!.instances)).toEqual(['default']);
      expect(second.applied).toEqual(['a']);
    },
  );

  it('a change is located at its key, a removed key at the nearest key still there, a removed top-level key nowhere', () => {
    const { d, second } = reloadAfter(
      {
        ...baseFiles(),
        'broker.yaml': 'kind: nats\nurl: nats://127.0.0.1:4222\n',
        'plugins/log.yaml': 'instances:\n  default: {}\n  second: {}\n',
      },
      (dir) => {
        dir.write('broker.yaml', 'kind: local\n');
        dir.write('plugins/log.yaml', '# two instances\ninstances:\n  default: {}\n  third:\n    {}\n');
      },
    );
    const broker = join(d.config, 'broker.yaml');
    const log = join(d.config, 'plugins', 'log.yaml');
    expect(second.restartRequired.map(({ reason: _r, ...c }) => c)).toEqual([
      { field: 'broker.yaml kind', file: broker, line: 1 },
      { field: 'broker.yaml url', file: broker },
      // `third:` is on line 4, its block value on line 5.
      { field: 'plugins/log.yaml instances.second', file: log, line: 2 },
      { field: 'plugins/log.yaml instances.third', file: log, line: 4 },
    ]);
  });

  it('a rotated secret inside a plugin instance is hot (credentials), not a restart', () => {
    const d = tempConfig({
      ...baseFiles(),
      'plugins/log.yaml': 'instances:\n  default:\n    token: ${file:tok}\n',
    });
    dirs.push(d);
    d.write('../tok', 'token-one-1111', 0o600);
    const first = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(first.errors).toEqual([]);
    d.write('../tok', 'token-two-2222', 0o600);
    const second = loadConfig(d.config, { cwd: d.root, env: {}, previous: first.snapshot });
    expect(second.restartRequired).toEqual([]);
    expect(second.diff!.global).toEqual([
      { field: 'plugins/log.yaml instances.default (credentials)', class: 'hot' },
    ]);
    expect(second.snapshot!.plugins.get('log')!.instances.default).toEqual({ token: 'token-two-2222' });
  });

  it('runtime log level is hot', () => {
    const { second } = reloadAfter(baseFiles(), (d) => d.write('runtime.yaml', 'log:\n  level: debug\n'));
    expect(second.diff!.global).toEqual([{ field: 'runtime.yaml log.level', class: 'hot' }]);
    expect(second.snapshot!.runtime.log.level).toBe('debug');
  });
});

describe('reload versions', () => {
  it('an invalid agent keeps its previous definition and version; valid ones move on', () => {
    const { second } = reloadAfter(baseFiles({ a: agentYaml(), b: agentYaml(), c: agentYaml() }), (d) => {
      d.write('agents.d/a.yaml', agentWith('system_prompt: hello', 'system_prompt: new'));
      d.write('agents.d/b.yaml', 'model: [broken');
    });
    expect(second.applied).toEqual(['a', 'c']);
    expect(second.rejected.map((r) => r.agentId)).toEqual(['b']);
    const s = second.snapshot!;
    expect(s.version).toBe(2);
    expect([s.agents.get('a')!.version, s.agents.get('b')!.version, s.agents.get('c')!.version]).toEqual([
      2, 1, 2,
    ]);
    expect(s.agents.get('b')!.definition.system_prompt).toBe('hello');
  });

  it('no new version when every agent is rejected', () => {
    const { second } = reloadAfter(baseFiles(), (d) => d.write('agents.d/a.yaml', 'nope: 1\n'));
    expect(second.snapshot).toBeNull();
    expect(second.applied).toEqual([]);
    expect(second.rejected[0]!.issues.map((i) => i.code)).toContain('CONFIG_UNKNOWN_KEY');
  });

  it('a fatal global error rejects the whole reload and names the file, not the agents', () => {
    const { second } = reloadAfter(baseFiles(), (d) => d.write('runtime.yaml', 'reload: {enabled: maybe}\n'));
    expect(second.snapshot).toBeNull();
    expect(second.rejected).toEqual([]);
    expect(second.errors).toEqual([
      expect.objectContaining({ scope: 'global', file: expect.stringContaining('runtime.yaml'), line: 1 }),
    ]);
  });

  it('an old provider stays for an agent that keeps its old definition', () => {
    const { second } = reloadAfter(baseFiles({ a: agentYaml(), b: agentYaml() }), (d) => {
      d.write(
        'llm.yaml',
        'providers:\n  other:\n    type: anthropic\n    base_url: http://127.0.0.1:3\n    api_key: key-3333\n',
      );
      d.write('agents.d/a.yaml', agentWith('provider: main', 'provider: other'));
    });
    expect(second.applied).toEqual(['a']);
    expect(second.snapshot!.agents.get('b')!.version).toBe(1);
    expect(second.snapshot!.provider('main')?.base_url).toBe('http://127.0.0.1:1/v1');
    expect(second.snapshot!.provider('other')?.type).toBe('anthropic');
  });

  it('tells an unchanged directory from a changed one by content, secrets included', () => {
    const files = {
      ...baseFiles(),
      'llm.yaml':
        'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:k}\n',
    };
    const d = tempConfig(files);
    dirs.push(d);
    d.write('../k', 'key-aaaa', 0o600);
    const one = loadConfig(d.config, { cwd: d.root, env: {} });
    const two = loadConfig(d.config, { cwd: d.root, env: {}, previous: one.snapshot });
    expect(two.unchanged).toBe(true);
    d.write('../k', 'key-bbbb', 0o600);
    const three = loadConfig(d.config, { cwd: d.root, env: {}, previous: two.snapshot });
    expect(three.unchanged).toBe(false);
    expect(three.snapshot!.redact('key-aaaa key-bbbb')).toBe('[redacted] [redacted]');
  });
});

describe('changedPaths', () => {
  it.each([
    [{ a: 1 }, { a: 1 }, []],
    [{ a: 1 }, { a: 2 }, ['a']],
    [{ a: { b: [1, 2] } }, { a: { b: [1, 3] } }, ['a.b']],
    [{ l: [{ x: 1 }, { x: 2 }] }, { l: [{ x: 1 }, { x: 3 }, { x: 4 }] }, ['l[1].x', 'l[2]']],
    [{ a: 1 }, { b: 1 }, ['a', 'b']],
  ])('%j -> %j', (a, b, paths) => {
    expect(changedPaths(a, b)).toEqual(paths);
  });

  it('is pure: same inputs, same output, inputs untouched', () => {
    const d = tempConfig(baseFiles());
    dirs.push(d);
    const s = loadConfig(d.config, { cwd: d.root, env: {} }).snapshot!;
    expect(diff(s, s)).toEqual({ agents: [{ agentId: 'a', status: 'unchanged', changes: [] }], global: [] });
  });
});

describe('snapshot store', () => {
  it('swaps atomically, refuses older versions and tells subscribers', () => {
    const d = tempConfig(baseFiles());
    dirs.push(d);
    const one = loadConfig(d.config, { cwd: d.root, env: {} }).snapshot!;
    d.write('agents.d/a.yaml', agentWith('name: m1', 'name: m9'));
    const two = loadConfig(d.config, { cwd: d.root, env: {}, previous: one }).snapshot!;
    const errors: unknown[] = [];
    const store = createSnapshotStore(one, (e) => errors.push(e));
    const seen: number[] = [];
    store.subscribe(() => {
      throw new Error('listener bug');
    });
    store.subscribe((next, prev) => seen.push(prev.version, next.version));
    expect(store.swap(two)).toBe(one);
    expect(store.current()).toBe(two);
    expect(seen).toEqual([1, 2]);
    expect(errors).toHaveLength(1);
    expect(() => store.swap(one)).toThrow(SnapshotVersionError);
    expect(store.current()).toBe(two);
  });
});
