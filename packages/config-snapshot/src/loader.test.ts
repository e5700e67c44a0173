import { chmodSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatIssue } from './issues.js';
import { loadConfig } from './config.js';
import { agentYaml, baseFiles, tempConfig, type TempDir } from './testing.js';

let dirs: TempDir[] = [];
const make = (files: Record<string, string>): TempDir => {
  const d = tempConfig(files);
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

describe('loadConfig', () => {
  it('numbers snapshots as the caller says (a config bundle version); another version is never unchanged', () => {
    const d = make(baseFiles({ a: agentYaml() }));
    const boot = loadConfig(d.config, { cwd: d.root, env: {}, version: 7 });
    expect(boot.snapshot?.version).toBe(7);
    expect(boot.snapshot?.agents.get('a')?.version).toBe(7);
    const same = loadConfig(d.config, { cwd: d.root, env: {}, previous: boot.snapshot, version: 7 });
    expect(same.unchanged).toBe(true);
    const next = loadConfig(d.config, { cwd: d.root, env: {}, previous: boot.snapshot, version: 9 });
    expect(next.unchanged).toBe(false);
    expect(next.snapshot?.version).toBe(9);
    expect(next.snapshot?.agents.get('a')?.version).toBe(9);
    expect(loadConfig(d.config, { cwd: d.root, env: {}, previous: next.snapshot }).snapshot?.version).toBe(
      10,
    );
  });

  it('loads a valid directory into snapshot v1 with defaults filled in', () => {
    const d = make(baseFiles({ a: agentYaml(), b: agentYaml() }));
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(r.errors).toEqual([]);
    expect(r.snapshot?.version).toBe(1);
    expect([...r.snapshot!.agents.keys()]).toEqual(['a', 'b']);
    const a = r.snapshot!.agents.get('a')!;
    expect(a.version).toBe(1);
    expect(a.definition.model.max_tokens).toBe(1024);
    expect(a.workspace).toBe(join(d.root, 'data', 'agents', 'a', 'workspace'));
    expect(r.snapshot!.runtime.metrics.listen).toBe('127.0.0.1:9090');
    expect(r.snapshot!.runtime.admin.listen).toBe('127.0.0.1:9091');
    expect(r.snapshot!.broker.kind).toBe('local');
    expect(r.snapshot!.sections.size).toBe(0);
    expect(r.applied).toEqual(['a', 'b']);
  });

  it('returns frozen snapshots', () => {
    const d = make(baseFiles());
    const s = loadConfig(d.config, { cwd: d.root, env: {} }).snapshot!;
    expect(Object.isFrozen(s)).toBe(true);
    expect(Object.isFrozen(s.agents.get('a')!.definition.inbound_bindings[0])).toBe(true);
  });

  it('reports a missing config directory as a fatal error', () => {
    const r = loadConfig('/nonexistent-config-dir', { env: {} });
    expect(r.snapshot).toBeNull();
    expect(r.errors[0]?.code).toBe('CONFIG_DIR_MISSING');
  });

  it('names file, line and column of a YAML syntax error, and keeps the other agents', () => {
    const d = make(
      baseFiles({ a: agentYaml(), b: 'model:\n  provider: main\n  name: [unclosed\n', c: agentYaml() }),
    );
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect([...r.snapshot!.agents.keys()]).toEqual(['a', 'c']);
    const e = r.errors.find((x) => x.agentId === 'b')!;
    expect(e.code).toBe('CONFIG_YAML_SYNTAX');
    expect(e.file).toBe(join(d.config, 'agents.d', 'b.yaml'));
    expect(e.line).toBeGreaterThanOrEqual(3);
    expect(e.column).toBeGreaterThan(0);
    expect(r.rejected.map((x) => x.agentId)).toEqual(['b']);
  });

  it('rejects an unknown key naming the YAML path, line, column and the allowed keys', () => {
    const d = make(baseFiles({ a: agentYaml(), b: agentYaml('', '    allowed_toolz: [x]\n') }));
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    const e = r.errors.find((x) => x.agentId === 'b')!;
    expect(e).toMatchObject({
      code: 'CONFIG_UNKNOWN_KEY',
      path: 'inbound_bindings[0].allowed_toolz',
      line: 11,
      column: 5,
    });
    expect(e.hint).toContain('allowed_tools');
    expect(formatIssue(e)).toBe(
      `${join(d.config, 'agents.d', 'b.yaml')}:11:5 inbound_bindings[0].allowed_toolz: unknown key "allowed_toolz" [CONFIG_UNKNOWN_KEY] (fix: remove it, or use one of: plugin, instance, allowed_tools, outbound_allowlist, system_prompt_extra)`,
    );
    expect(r.snapshot!.agents.has('a')).toBe(true);
  });

  it('loads two good agents when the third is invalid', () => {
    const d = make(
      baseFiles({
        a: agentYaml(),
        b: agentYaml(),
        c: 'model: {provider: nope, name: x}\ninbound_bindings: []\n',
      }),
    );
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect([...r.snapshot!.agents.keys()]).toEqual(['a', 'b']);
    expect(r.rejected).toHaveLength(1);
    expect(r.rejected[0]).toMatchObject({ agentId: 'c' });
    expect(r.rejected[0]!.reason).toContain('c.yaml:1:');
    expect(r.rejected[0]!.issues[0]).toMatchObject({
      code: 'CONFIG_UNKNOWN_PROVIDER',
      path: 'model.provider',
    });
  });

  it('checks bindings against known channels, instances and accounts', () => {
    const d = make(
      baseFiles({
        a: agentYaml('credentials:\n  mail: nobody\n'),
        b: agentYaml().replace('plugin: log', 'plugin: chat_z'),
        c: agentYaml().replace('instance: default', 'instance: other'),
      }),
    );
    const r = loadConfig(d.config, { cwd: d.root, env: {}, channels: ['log', 'chat_a'] });
    const codes = Object.fromEntries(r.rejected.map((x) => [x.agentId, x.issues.map((i) => i.code)]));
    expect(codes).toEqual({
      a: ['CONFIG_UNKNOWN_ACCOUNT'],
      b: ['CONFIG_UNKNOWN_PLUGIN'],
      c: ['CONFIG_UNKNOWN_INSTANCE'],
    });
  });

  it('validates plugin blocks with registered schemas and drops invalid instances', () => {
    const d = make({
      ...baseFiles(),
      'plugins/chat_b.yaml': 'instances:\n  good:\n    bot_token: t-123456\n  bad:\n    bot_tokn: x\n',
    });
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['bot_token'],
      properties: { bot_token: { type: 'string' } },
    };
    const r = loadConfig(d.config, {
      cwd: d.root,
      env: {},
      pluginSchemas: { chat_b: { instance: schema }, log: { instance: { type: 'object' } } },
    });
    const p = r.snapshot!.plugins.get('chat_b')!;
    expect(Object.keys(p.instances)).toEqual(['good']);
    expect(r.errors.map((e) => [e.plugin, e.path, e.code])).toEqual([
      ['chat_b', 'instances.bad', 'CONFIG_MISSING_KEY'],
      ['chat_b', 'instances.bad.bot_tokn', 'CONFIG_UNKNOWN_KEY'],
    ]);
  });

  it('treats literal provider keys and secret-named plugin fields as secrets', () => {
    const d = make({
      ...baseFiles(),
      'plugins/chat_b.yaml': 'instances:\n  main:\n    bot_token: tok-literal-999\n',
    });
    const s = loadConfig(d.config, { cwd: d.root, env: {} }).snapshot!;
    expect(s.redact('a key-one-1234 b tok-literal-999')).toBe('a [redacted] b [redacted]');
  });

  it('warns about a plugin file nobody knows', () => {
    const d = make({ ...baseFiles(), 'plugins/mystery.yaml': 'instances: {}\n' });
    const r = loadConfig(d.config, { cwd: d.root, env: {}, pluginSchemas: { log: {} } });
    expect(r.warnings.map((w) => w.code)).toEqual(['CONFIG_PLUGIN_NO_SCHEMA']);
  });

  it('needs a url for the nats broker', () => {
    const d = make({ ...baseFiles(), 'broker.yaml': 'kind: nats\n' });
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(r.snapshot).toBeNull();
    expect(r.errors[0]).toMatchObject({
      code: 'CONFIG_MISSING_KEY',
      message: 'kind "nats" needs "url"',
      line: 1,
    });
  });

  it('makes an invalid global file fatal', () => {
    const d = make({ ...baseFiles(), 'runtime.yaml': 'log:\n  level: loud\n' });
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(r.snapshot).toBeNull();
    expect(r.errors[0]).toMatchObject({
      scope: 'global',
      code: 'CONFIG_INVALID_VALUE',
      path: 'log.level',
      line: 2,
    });
  });

  it('rejects only the provider that is invalid, and the agents that use it', () => {
    const d = make({
      ...baseFiles({ a: agentYaml(), b: agentYaml().replace('provider: main', 'provider: other') }),
      'llm.yaml':
        'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: k-1234\n  other:\n    type: gemini\n    base_url: http://y\n    api_key: k\n',
    });
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect([...r.snapshot!.agents.keys()]).toEqual(['a']);
    expect(r.errors.map((e) => [e.scope, e.provider ?? e.agentId, e.code])).toEqual([
      ['provider', 'other', 'CONFIG_INVALID_VALUE'],
      ['agent', 'b', 'CONFIG_UNKNOWN_PROVIDER'],
    ]);
    expect(r.rejected[0]!.issues[0]!.message).toBe('provider "other" is invalid in llm.yaml');
  });
});

describe('secret references', () => {
  it('reads ${file:} relative to the working directory and trims one trailing newline', () => {
    const d = make(baseFiles());
    d.write('../secrets/k.key', 'sk-live-abcdef\n', 0o600);
    d.write(
      'llm.yaml',
      'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:secrets/k.key}\n',
    );
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(r.errors).toEqual([]);
    expect(r.snapshot!.provider('main')!.api_key).toBe('sk-live-abcdef');
    expect(r.snapshot!.secretFiles).toEqual([join(d.root, 'secrets', 'k.key')]);
    expect(r.snapshot!.redact('key=sk-live-abcdef!')).toBe('key=[redacted]!');
  });

  it('refuses a secret file with mode 644, naming path, mode and chmod 600, never the value', () => {
    const d = make(baseFiles());
    d.write('../secrets/k.key', 'sk-live-abcdef\n', 0o644);
    d.write(
      'llm.yaml',
      'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:secrets/k.key}\n',
    );
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    const e = r.errors.find((x) => x.code === 'CONFIG_SECRET_PERMISSIONS')!;
    expect(e.message).toContain('secrets/k.key');
    expect(e.message).toContain('0644');
    expect(e.hint).toBe(`chmod 600 ${join(d.root, 'secrets', 'k.key')}`);
    expect(e).toMatchObject({ path: 'providers.main.api_key', line: 5, provider: 'main' });
    expect(JSON.stringify(r)).not.toContain('sk-live-abcdef');
    expect(r.snapshot!.agents.size).toBe(0);
  });

  it('accepts a symlink to a 600 file, and checks the mode of the target', () => {
    const d = make(baseFiles());
    const target = d.write('../secrets/real.key', 'sk-linked-1234', 0o600);
    symlinkSync(target, join(d.root, 'secrets', 'link.key'));
    d.write(
      'llm.yaml',
      'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:secrets/link.key}\n',
    );
    expect(loadConfig(d.config, { cwd: d.root, env: {} }).snapshot!.provider('main')!.api_key).toBe(
      'sk-linked-1234',
    );
    d.write('../secrets/real.key', 'sk-linked-1234', 0o640);
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(r.errors[0]!.code).toBe('CONFIG_SECRET_PERMISSIONS');
    expect(r.errors[0]!.message).toContain('-> ');
  });

  it('reports a missing secret file and an empty one', () => {
    const d = make(baseFiles());
    d.write('../secrets/empty.key', '\n', 0o600);
    d.write(
      'llm.yaml',
      'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:secrets/none.key}\n  two:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:secrets/empty.key}\n',
    );
    const codes = loadConfig(d.config, { cwd: d.root, env: {} })
      .errors.filter((e) => e.scope === 'provider')
      .map((e) => e.code);
    expect(codes).toEqual(['CONFIG_SECRET_MISSING', 'CONFIG_SECRET_EMPTY']);
  });

  it('tracks a secret file that is missing or refused, and its state is part of the content hash', () => {
    const d = make(baseFiles());
    d.write(
      'llm.yaml',
      'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:secrets/k.key}\n',
    );
    const key = join(d.root, 'secrets', 'k.key');
    const load = () => loadConfig(d.config, { cwd: d.root, env: {} });

    const missing = load();
    expect(missing.errors[0]!.code).toBe('CONFIG_SECRET_MISSING');
    expect(missing.secretFiles).toEqual([key]);
    expect(missing.snapshot!.secretFiles).toEqual([key]);

    d.write('../secrets/k.key', 'sk-live-abcdef\n', 0o644);
    const refused = load();
    expect(refused.errors[0]!.code).toBe('CONFIG_SECRET_PERMISSIONS');
    expect(refused.secretFiles).toEqual([key]);
    expect(refused.contentHash).not.toBe(missing.contentHash);

    chmodSync(key, 0o600);
    const ok = load();
    expect(ok.errors).toEqual([]);
    expect(ok.contentHash).not.toBe(refused.contentHash);
    expect(ok.contentHash).not.toBe(missing.contentHash);
    expect(ok.contentHash).toBe(ok.snapshot!.contentHash);

    // Against a previous snapshot: the same state is unchanged, a created file or a fixed mode is not.
    const prev = { cwd: d.root, env: {}, previous: refused.snapshot };
    chmodSync(key, 0o644);
    expect(loadConfig(d.config, prev).unchanged).toBe(true);
    chmodSync(key, 0o600);
    expect(loadConfig(d.config, prev).unchanged).toBe(false);
    rmSync(key);
    expect(loadConfig(d.config, { ...prev, previous: missing.snapshot }).unchanged).toBe(true);
    d.write('../secrets/k.key', 'sk-live-abcdef\n', 0o600);
    expect(loadConfig(d.config, { ...prev, previous: missing.snapshot }).unchanged).toBe(false);

    for (const r of [missing, refused]) expect(JSON.stringify(r)).not.toContain('sk-live-abcdef');
    expect(JSON.stringify([ok.contentHash, ok.secretFiles, ok.errors])).not.toContain('sk-live-abcdef');
  });

  it('names an unset variable and the file, and rejects only that agent', () => {
    const d = make(
      baseFiles({
        a: agentYaml(),
        b: agentYaml().replace('system_prompt: hello', 'system_prompt: ${PROMPT_B}'),
      }),
    );
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    const e = r.errors[0]!;
    expect(e).toMatchObject({
      code: 'CONFIG_ENV_UNSET',
      agentId: 'b',
      file: join(d.config, 'agents.d', 'b.yaml'),
      path: 'system_prompt',
      line: 4,
    });
    expect(e.message).toBe('environment variable PROMPT_B is not set');
    expect([...r.snapshot!.agents.keys()]).toEqual(['a']);
  });

  it('writes a literal ${ with $${ and rejects unknown reference forms', () => {
    const d = make(
      baseFiles({
        a: agentYaml().replace('system_prompt: hello', () => 'system_prompt: "cost $${price}"'),
        b: agentYaml().replace('system_prompt: hello', 'system_prompt: "${cmd:ls}"'),
      }),
    );
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(r.snapshot!.agents.get('a')!.definition.system_prompt).toBe('cost ${price}');
    expect(r.errors[0]!.code).toBe('CONFIG_BAD_REFERENCE');
  });
});
