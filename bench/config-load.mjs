// Time to load, validate and diff configs of 2, 50 and 500 agents (target: 50 agents under 20 ms median).
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diff, loadConfig } from '../packages/config-snapshot/dist/index.js';

function makeConfig(agents) {
  const root = mkdtempSync(join(tmpdir(), 'bench-cfg-'));
  const dir = join(root, 'config');
  mkdirSync(join(dir, 'agents.d'), { recursive: true });
  mkdirSync(join(dir, 'plugins'));
  writeFileSync(
    join(dir, 'llm.yaml'),
    'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key: bench-key-1234\n',
  );
  writeFileSync(join(dir, 'plugins', 'log.yaml'), 'instances:\n  default: {}\n');
  for (let i = 0; i < agents; i++) {
    writeFileSync(
      join(dir, 'agents.d', `agent-${i}.yaml`),
      `model:\n  provider: main\n  name: m\nsystem_prompt: |\n  You are agent ${i}.\ninbound_bindings:\n  - plugin: log\n    instance: default\n    allowed_tools: ["*"]\n    outbound_allowlist:\n      log: [op, other]\n    system_prompt_extra: extra ${i}\n  - plugin: log\n    allowed_tools: [send_message]\n`,
    );
  }
  return { root, dir };
}

function touchAll(dir, i) {
  for (const f of readdirSync(join(dir, 'agents.d')))
    appendFileSync(join(dir, 'agents.d', f), `# edit ${i}\n`);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
function p99(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))];
}

function run({ quick = false } = {}) {
  const rows = [];
  for (const n of [2, 50, 500]) {
    const { root, dir } = makeConfig(n);
    const opts = { cwd: root, env: {}, channels: ['log'] };
    const base = loadConfig(dir, opts);
    if (base.errors.length) throw new Error('bench config invalid: ' + base.errors[0].message);
    const iterations = quick ? 5 : n >= 500 ? 20 : 100;
    for (let i = 0; i < 3; i++) loadConfig(dir, { ...opts, previous: base.snapshot });
    const times = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = performance.now();
      const r = loadConfig(dir, { ...opts, previous: base.snapshot });
      diff(base.snapshot, r.snapshot);
      times.push(performance.now() - t0);
    }
    // Cold: every file changed since the last load (nothing parsed before), e.g. the first load at boot.
    const cold = [];
    for (let i = 0; i < Math.max(3, Math.floor(iterations / 5)); i++) {
      touchAll(dir, i);
      const t0 = performance.now();
      loadConfig(dir, { ...opts, previous: base.snapshot });
      cold.push(performance.now() - t0);
    }
    rmSync(root, { recursive: true, force: true });
    rows.push({
      agents: n,
      median_ms: median(times),
      p99_ms: p99(times),
      cold_median_ms: median(cold),
      iterations,
    });
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = run({ quick: process.argv.includes('--quick') });
  console.log('config-load: load + validate + diff against the previous snapshot');
  console.log(
    '  warm = unchanged files (a typical reload: parsed files are reused); cold = every agent file changed',
  );
  for (const r of rows)
    console.log(
      `  agents=${String(r.agents).padStart(3)}  warm median=${r.median_ms.toFixed(2)} ms  p99=${r.p99_ms.toFixed(2)} ms  cold median=${r.cold_median_ms.toFixed(2)} ms  (n=${r.iterations})`,
    );
  const fifty = rows.find((r) => r.agents === 50);
  for (const [label, v] of [
    ['warm', fifty.median_ms],
    ['cold', fifty.cold_median_ms],
  ])
    console.log(
      `  target: 50 agents median < 20 ms (${label}) -> ${v.toFixed(2)} ms, ${(v / 20).toFixed(2)}x of target ${v < 20 ? 'OK' : 'MISSED'}`,
    );
}
