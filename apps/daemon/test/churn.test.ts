// Churn: 200 reloads alternating two configurations while 20 sessions run turns against a model with
// random latency. No turn may fail, and every model and tool call of one turn must see one snapshot.
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentRuntime } from '@agent/agent-runtime';
import { builtinChannels } from '@agent/channels';
import { createSnapshotStore, loadConfig } from '@agent/config-snapshot';
import { createMemoryLogger } from '@agent/log';
import {
  createFakeOpenAI,
  openaiCompletion,
  openaiText,
  type RecordedRequest,
} from '@agent/model-providers/testing';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfigMetrics } from '../src/config-metrics.js';
import { loadOptionsFor } from '../src/daemon.js';
import { createReloadPipeline } from '../src/reload.js';

const SESSIONS = 20;
const TURNS_PER_SESSION = 6;
const RELOADS = 200;

let root: string;

function turnOf(req: RecordedRequest): string {
  const msgs = (req.body as { messages: { role: string; content: string }[] }).messages;
  return msgs.filter((m) => m.role === 'user').at(-1)!.content;
}
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('reload churn', () => {
  it('200 reloads during 120 turns: zero failed turns, one snapshot per turn', async () => {
    const llm = await createFakeOpenAI();
    root = mkdtempSync(join(tmpdir(), 'churn-'));
    const config = join(root, 'config');
    mkdirSync(join(config, 'agents.d'), { recursive: true });
    mkdirSync(join(config, 'plugins'));
    const outFile = join(root, 'out.jsonl');
    const writeConfig = (k: 'A' | 'B'): void => {
      writeFileSync(
        join(config, 'llm.yaml'),
        `providers:\n  main:\n    type: openai\n    base_url: ${llm.baseUrl}\n    api_key: key-${k}-1234\n    max_retries: 0\n`,
      );
      writeFileSync(
        join(config, 'agents.d', 'a.yaml'),
        `model:\n  provider: main\n  name: m\nsystem_prompt: prompt-${k}\ninbound_bindings:\n  - plugin: log\n    instance: default\n    allowed_tools: ["*"]\n`,
      );
    };
    writeFileSync(join(config, 'plugins', 'log.yaml'), `instances:\n  default:\n    file: ${outFile}\n`);
    writeFileSync(join(config, 'memory.yaml'), 'enabled: false\n');
    writeFileSync(join(config, 'runtime.yaml'), 'sessions:\n  max_queue: 64\n');
    writeConfig('A');

    const loadOptions = { ...loadOptionsFor({ cwd: root, env: {} }) };
    const boot = loadConfig(config, loadOptions);
    expect(boot.errors).toEqual([]);
    const store = createSnapshotStore(boot.snapshot!);
    const logger = createMemoryLogger('warn');
    const runtime = createAgentRuntime({
      store,
      channels: builtinChannels,
      logger,
      dataDir: join(root, 'data'),
    });
    await runtime.start();

    // The tool records which snapshot its turn runs on.
    const toolSeen = new Map<string, string>();
    runtime.registerTools(() => [
      {
        name: 'probe',
        description: 'records the snapshot',
        parameters: { type: 'object', properties: { turn: { type: 'string' } }, required: ['turn'] },
        handler: async (
          args: Record<string, unknown>,
          ctx: { snapshot?: { provider(n: string): { api_key: string } | undefined } },
        ) => {
          toolSeen.set(String(args.turn), ctx.snapshot?.provider('main')?.api_key ?? '?');
          return 'ok';
        },
      },
    ]);

    llm.setHandler((req) => {
      const body = req.body as { messages: { role: string }[] };
      const delayMs = Math.floor(Math.random() * 200);
      const turn = turnOf(req);
      return body.messages.some((m) => m.role === 'tool')
        ? { ...openaiText(`done ${turn}`), delayMs }
        : { ...openaiCompletion({ toolCalls: [{ name: 'probe', arguments: { turn } }] }), delayMs };
    });

    const pipeline = createReloadPipeline({
      configDir: config,
      loadOptions,
      store,
      logger,
      metrics: createConfigMetrics(new Registry()),
      apply: async () => {},
    });

    const sessions = Array.from({ length: SESSIONS }, async (_, s) => {
      for (let t = 0; t < TURNS_PER_SESSION; t++) {
        const turn = `s${s}-t${t}`;
        await runtime.handleInbound({
          plugin: 'log',
          instance: 'default',
          chatId: `chat-${s}`,
          senderId: 'u',
          text: turn,
          messageId: turn,
          receivedAt: new Date().toISOString(),
        });
        await new Promise((r) => setTimeout(r, Math.random() * 150));
      }
    });
    let applied = 0;
    const reloads = (async () => {
      for (let i = 0; i < RELOADS; i++) {
        writeConfig(i % 2 === 0 ? 'B' : 'A');
        const o = await pipeline.reload({ source: 'cli', requestId: String(i) });
        if (o.ack.applied.length === 1) applied++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await Promise.all([...sessions, reloads]);
    const total = SESSIONS * TURNS_PER_SESSION;
    const deadline = Date.now() + 30_000;
    const delivered = (): { text: string }[] =>
      existsSync(outFile)
        ? readFileSync(outFile, 'utf8')
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { text: string })
        : [];
    while (delivered().length < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await runtime.stop({ graceMs: 1000 });
    await llm.close();

    expect(applied).toBe(RELOADS);
    expect(store.current().version).toBe(RELOADS + 1);
    const texts = delivered().map((d) => d.text);
    expect(texts).toHaveLength(total);
    expect(texts.every((t) => t.startsWith('done '))).toBe(true);
    // Every turn: both model calls carry one key, the tool saw the snapshot with that same key.
    const keysByTurn = new Map<string, Set<string>>();
    for (const r of llm.requests) {
      const t = turnOf(r);
      const set = keysByTurn.get(t) ?? new Set<string>();
      set.add(r.headers.authorization!.replace('Bearer ', ''));
      keysByTurn.set(t, set);
    }
    expect(keysByTurn.size).toBe(total);
    let sawBoth = new Set<string>();
    for (const [turn, keys] of keysByTurn) {
      expect([...keys], turn).toHaveLength(1);
      expect(toolSeen.get(turn), turn).toBe([...keys][0]);
      sawBoth = new Set([...sawBoth, ...keys]);
    }
    expect(sawBoth).toEqual(new Set(['key-A-1234', 'key-B-1234']));
    expect(llm.requests).toHaveLength(total * 2);
  }, 120_000);
});
