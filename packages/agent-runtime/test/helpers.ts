// Test helpers: config directories on disk, snapshots loaded the way the daemon loads them, and a runtime.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  builtinChannels,
  type ChannelPlugin,
  type InboundMessage,
  type LogDeliveryRecord,
} from '@agent/channels';
import {
  createSnapshotStore,
  loadConfig,
  type ConfigSnapshot,
  type SnapshotStore,
} from '@agent/config-snapshot';
import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import { createAgentRuntime, type AgentRuntime, type AgentRuntimeOptions } from '../src/index.js';

export interface TestEnv {
  root: string;
  config: string;
  dataDir: string;
  /** The `file` of the log channel's `default` instance. */
  outFile: string;
  write(rel: string, content: string): void;
  /** Loads the config dir; with `previous`, as a reload. Throws when nothing could be applied. */
  load(previous?: ConfigSnapshot): ConfigSnapshot;
  cleanup(): void;
}

export function providerYaml(
  name: string,
  type: 'openai' | 'anthropic',
  baseUrl: string,
  apiKey: string,
): string {
  return `  ${name}:\n    type: ${type}\n    base_url: ${baseUrl}\n    api_key: ${apiKey}\n    max_retries: 0\n    timeout_ms: 10000\n`;
}

export interface AgentSpec {
  provider?: string;
  systemPrompt?: string;
  maxToolRounds?: number;
  /** YAML list items under inbound_bindings (each starting with `  - plugin: ...`). */
  bindings?: string;
}

export function binding(opts: {
  plugin?: string;
  instance?: string;
  allowedTools?: string[];
  allowlist?: Record<string, string[]>;
  extra?: string;
}): string {
  let y = `  - plugin: ${opts.plugin ?? 'log'}\n`;
  if (opts.instance !== undefined) y += `    instance: ${opts.instance}\n`;
  y += `    allowed_tools: ${JSON.stringify(opts.allowedTools ?? ['*'])}\n`;
  y += `    outbound_allowlist: ${JSON.stringify(opts.allowlist ?? {})}\n`;
  if (opts.extra !== undefined) y += `    system_prompt_extra: ${JSON.stringify(opts.extra)}\n`;
  return y;
}

export function agentYaml(spec: AgentSpec = {}): string {
  return `model:
  provider: ${spec.provider ?? 'main'}
  name: test-model
  max_tokens: 256
  max_tool_rounds: ${spec.maxToolRounds ?? 4}
system_prompt: ${JSON.stringify(spec.systemPrompt ?? 'You are a test agent.')}
inbound_bindings:
${spec.bindings ?? binding({})}`;
}

export function createTestEnv(): TestEnv {
  const root = mkdtempSync(join(tmpdir(), 'agent-rt-'));
  const config = join(root, 'config');
  const dataDir = join(root, 'data');
  const outFile = join(root, 'out', 'log.jsonl');
  mkdirSync(config);
  const env: TestEnv = {
    root,
    config,
    dataDir,
    outFile,
    write(rel, content) {
      const p = join(config, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, content);
    },
    load(previous) {
      const res = loadConfig(config, {
        cwd: root,
        env: {},
        channels: builtinChannels.map((c) => c.name),
        pluginSchemas: Object.fromEntries(
          builtinChannels.map((c) => [c.name, { instance: c.instanceSchema }]),
        ),
        ...(previous ? { previous } : {}),
      });
      if (!res.snapshot) {
        throw new Error(`config did not load: ${JSON.stringify([...res.errors, ...res.rejected], null, 1)}`);
      }
      return res.snapshot;
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
  env.write('runtime.yaml', `data_dir: ${dataDir}\n`);
  env.write('memory.yaml', `enabled: false\n`);
  env.write('plugins/log.yaml', `instances:\n  default:\n    file: ${outFile}\n`);
  return env;
}

export interface Harness {
  env: TestEnv;
  store: SnapshotStore;
  logger: MemoryLogger;
  runtime: AgentRuntime;
}

export async function startRuntime(
  env: TestEnv,
  extra: Partial<AgentRuntimeOptions> = {},
  channels: readonly ChannelPlugin[] = builtinChannels,
): Promise<Harness> {
  const store = createSnapshotStore(env.load());
  const logger = createMemoryLogger('debug');
  const runtime = createAgentRuntime({
    store,
    channels,
    logger,
    dataDir: env.dataDir,
    memory: null,
    clock: () => new Date('2026-03-01T10:00:00.000Z'),
    ...extra,
  });
  await runtime.start();
  return { env, store, logger, runtime };
}

let seq = 0;
export function inbound(text: string, over: Partial<InboundMessage> = {}): InboundMessage {
  seq += 1;
  return {
    plugin: 'log',
    instance: 'default',
    chatId: 'chat-1',
    senderId: 'chat-1',
    text,
    messageId: `m${seq}`,
    receivedAt: '2026-03-01T10:00:00.000Z',
    ...over,
  };
}

/** Deliveries of the log channel's `default` instance. */
export function deliveries(env: TestEnv): LogDeliveryRecord[] {
  if (!existsSync(env.outFile)) return [];
  return readFileSync(env.outFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LogDeliveryRecord);
}

export function readJsonl(path: string): Record<string, unknown>[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function waitFor(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export interface Gate {
  promise: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}
