// Turns per second through the agent runtime with a zero-latency fake model, and the added latency per turn
// over a direct call to the same fake (target: under 2 ms median overhead per turn).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentRuntime } from '../packages/agent-runtime/dist/index.js';
import { createSnapshotStore, loadConfig } from '../packages/config-snapshot/dist/index.js';
import { silentLogger } from '../packages/log/dist/index.js';
import { createModelClient } from '../packages/model-providers/dist/index.js';
import { createFakeOpenAI, openaiText } from '../packages/model-providers/dist/testing/index.js';

const quick = process.argv.includes('--quick');
const N = quick ? 200 : 1000;

const llm = await createFakeOpenAI();
llm.setHandler(() => openaiText('ok'));

// A channel that resolves a waiter when the runtime sends the reply: no polling in the measurement.
const waiters = new Map();
const benchChannel = {
  name: 'bench',
  instanceSchema: { type: 'object' },
  create: () => ({
    start: async () => {},
    stop: async () => {},
    send: async (m) => {
      waiters.get(m.to)?.();
      waiters.delete(m.to);
      return { ids: ['1'] };
    },
  }),
};

const root = mkdtempSync(join(tmpdir(), 'bench-turns-'));
const config = join(root, 'config');
mkdirSync(join(config, 'agents.d'), { recursive: true });
mkdirSync(join(config, 'plugins'));
writeFileSync(
  join(config, 'llm.yaml'),
  `providers:\n  main:\n    type: openai\n    base_url: ${llm.baseUrl}\n    api_key: bench-key-1234\n`,
);
writeFileSync(join(config, 'plugins', 'bench.yaml'), 'instances:\n  default: {}\n');
writeFileSync(join(config, 'memory.yaml'), 'enabled: false\n');
writeFileSync(join(config, 'runtime.yaml'), 'sessions:\n  max_queue: 1000\n');
writeFileSync(
  join(config, 'agents.d', 'a.yaml'),
  'model:\n  provider: main\n  name: m\nsystem_prompt: hi\ninbound_bindings:\n  - plugin: bench\n    instance: default\n',
);
const loaded = loadConfig(config, {
  cwd: root,
  env: {},
  channels: ['bench'],
  pluginSchemas: { bench: { instance: { type: 'object' } } },
});
if (!loaded.snapshot) throw new Error(loaded.errors.map((e) => e.message).join('\n'));
const store = createSnapshotStore(loaded.snapshot);
const runtime = createAgentRuntime({
  store,
  channels: [benchChannel],
  logger: silentLogger,
  dataDir: join(root, 'data'),
  memory: null,
});
await runtime.start();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const turn = (chat, i) =>
  new Promise((resolve) => {
    waiters.set(chat, resolve);
    void runtime.handleInbound({
      plugin: 'bench',
      instance: 'default',
      chatId: chat,
      senderId: 'u',
      text: `m${i}`,
      messageId: `${chat}-${i}`,
      receivedAt: new Date().toISOString(),
    });
  });

// Direct calls to the fake through the same client type, as the baseline.
const client = createModelClient(
  {
    name: 'main',
    type: 'openai',
    base_url: llm.baseUrl,
    api_key: 'bench-key-1234',
    timeout_ms: 10000,
    max_retries: 0,
  },
  { logger: silentLogger },
);
const req = { model: 'm', system: 'hi', messages: [{ role: 'user', content: 'x' }], tools: [] };
for (let i = 0; i < 50; i++) {
  await client.complete(req);
  await turn('seq', -i - 1);
}
// Interleaved, so that machine noise hits both series alike.
const direct = [];
const turns = [];
for (let i = 0; i < N; i++) {
  let t0 = performance.now();
  await client.complete(req);
  direct.push(performance.now() - t0);
  t0 = performance.now();
  await turn('seq', i);
  turns.push(performance.now() - t0);
}
// Throughput: 20 sessions at once.
const t0 = performance.now();
await Promise.all(
  Array.from({ length: 20 }, async (_, s) => {
    for (let i = 0; i < N / 20; i++) await turn(`par-${s}`, i);
  }),
);
const secs = (performance.now() - t0) / 1000;

await runtime.stop({ graceMs: 1000 });
await client.retire();
await llm.close();
rmSync(root, { recursive: true, force: true });

const overhead = median(turns) - median(direct);
console.log('turns: one model call per turn, zero-latency fake model, reply through an in-process channel');
console.log(
  `  direct model call median=${median(direct).toFixed(2)} ms   turn median=${median(turns).toFixed(2)} ms   (n=${N})`,
);
console.log(`  throughput with 20 sessions: ${(N / secs).toFixed(0)} turns/s`);
console.log(
  `  target: overhead per turn < 2 ms -> ${overhead.toFixed(2)} ms, ${(overhead / 2).toFixed(2)}x of target ${overhead < 2 ? 'OK' : 'MISSED'}`,
);
