import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@agent/config-snapshot';
import { afterEach, describe, expect, it } from 'vitest';
import { renderCheckConfig } from './check-config.js';

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function load(files: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'check-'));
  roots.push(root);
  const dir = join(root, 'config');
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return { result: loadConfig(dir, { cwd: root, env: {} }), dir };
}

const BASE = {
  'llm.yaml':
    'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key: k-123456\n',
  'plugins/log.yaml': 'instances:\n  default: {}\n',
  'agents.d/ops.yaml':
    'model:\n  provider: main\n  name: m\nsystem_prompt: hi\ninbound_bindings:\n  - plugin: log\n    allowed_tools: ["*"]\n',
  'agents.d/helper.yaml':
    'model:\n  provider: main\n  name: m\nsystem_prompt: hi\ninbound_bindings:\n  - plugin: log\n    allowed_tools: ["*"]\n',
};

describe('renderCheckConfig', () => {
  it('a clean config: one line, exit 0', () => {
    const out = renderCheckConfig(load(BASE).result);
    expect(out).toEqual({ stdout: ['config ok: 2 agent(s)'], stderr: [], exitCode: 0 });
  });

  it('pollers the daemon checked: counts and each rejected job on stderr, exit 1', () => {
    const out = renderCheckConfig(load(BASE).result, {
      enabled: true,
      total: 3,
      jobs: { valid: 2, rejected: [{ id: 'bad', errors: ['config/pollers.yaml:4:7 kind: nope'] }] },
      legacy: [],
    });
    expect(out.stdout).toEqual(['config has errors: 2 valid agent(s), 2 of 3 poller job(s) valid']);
    expect(out.stderr).toEqual(['error: job bad: config/pollers.yaml:4:7 kind: nope']);
    expect(out.exitCode).toBe(1);
  });

  it('a fatal config: errors on stderr, exit 1', () => {
    const out = renderCheckConfig(load({ ...BASE, 'runtime.yaml': 'admin: 3\n' }).result);
    expect(out.exitCode).toBe(1);
    expect(out.stderr[0]).toMatch(/^error: .*runtime\.yaml/);
  });
});
