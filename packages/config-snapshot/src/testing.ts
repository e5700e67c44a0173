/** Test kit: temporary config directories written from a map of files, and minimal valid files. */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface TempDir {
  root: string;
  config: string;
  write(rel: string, content: string, mode?: number): string;
  remove(rel: string): void;
  cleanup(): void;
}

export function tempConfig(files: Record<string, string> = {}): TempDir {
  const root = mkdtempSync(join(tmpdir(), 'cfg-'));
  const config = join(root, 'config');
  mkdirSync(config);
  const t: TempDir = {
    root,
    config,
    write(rel, content, mode) {
      const p = join(config, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
      if (mode !== undefined) chmodSync(p, mode);
      return p;
    },
    remove(rel) {
      rmSync(join(config, rel), { force: true });
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
  for (const [rel, content] of Object.entries(files)) t.write(rel, content);
  return t;
}

export const LLM = `providers:
  main:
    type: openai
    base_url: http://127.0.0.1:1/v1
    api_key: key-one-1234
`;

export function agentYaml(extra = '', binding = ''): string {
  return `model:
  provider: main
  name: m1
system_prompt: hello
inbound_bindings:
  - plugin: log
    instance: default
    allowed_tools: ["*"]
    outbound_allowlist:
      log: [op]
${binding}${extra}`;
}

export const LOG_PLUGIN = `instances:
  default: {}
`;

export function baseFiles(agents: Record<string, string> = { a: agentYaml() }): Record<string, string> {
  const files: Record<string, string> = { 'llm.yaml': LLM, 'plugins/log.yaml': LOG_PLUGIN };
  for (const [id, y] of Object.entries(agents)) files[`agents.d/${id}.yaml`] = y;
  return files;
}

/** Temporary config directories made during a test file, removed together (pass `cleanup` to `afterEach`). */
export function tempConfigPool(): { make(files: Record<string, string>): TempDir; cleanup(): void } {
  const dirs: TempDir[] = [];
  return {
    make(files) {
      const d = tempConfig(files);
      dirs.push(d);
      return d;
    },
    cleanup() {
      for (const d of dirs.splice(0)) d.cleanup();
    },
  };
}
