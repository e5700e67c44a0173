// The reload pipeline alone: single flight, coalescing, skip-if-unchanged, metrics.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSnapshotStore, loadConfig } from '@agent/config-snapshot';
import { createMemoryLogger } from '@agent/log';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfigMetrics } from '../src/config-metrics.js';
import { loadOptionsFor } from '../src/daemon.js';
import { createReloadPipeline, type ReloadPipelineDeps } from '../src/reload.js';

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

const agent = (p: string): string =>
  `model:\n  provider: main\n  name: m\nsystem_prompt: ${p}\ninbound_bindings:\n  - plugin: log\n`;

const LLM_YAML = (key: string): string =>
  `providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: ${key}\n`;

function setup(
  apply: () => Promise<void> = async () => {},
  extra: Pick<ReloadPipelineDeps, 'watchFiles' | 'status' | 'source'> = {},
) {
  root = mkdtempSync(join(tmpdir(), 'pipeline-'));
  const config = join(root, 'config');
  mkdirSync(join(config, 'agents.d'), { recursive: true });
  mkdirSync(join(config, 'plugins'));
  writeFileSync(join(config, 'llm.yaml'), LLM_YAML('key-1234'));
  writeFileSync(join(config, 'plugins', 'log.yaml'), 'instances:\n  default: {}\n');
  writeFileSync(join(config, 'agents.d', 'a.yaml'), agent('one'));
  const loadOptions = loadOptionsFor({ cwd: root, env: {} });
  const store = createSnapshotStore(loadConfig(config, loadOptions).snapshot!);
  const registry = new Registry();
  const logger = createMemoryLogger();
  const pipeline = createReloadPipeline({
    configDir: config,
    loadOptions,
    store,
    logger,
    metrics: createConfigMetrics(registry),
    apply,
    ...extra,
  });
  return {
    config,
    store,
    registry,
    logger,
    pipeline,
    edit: (p: string) => writeFileSync(join(config, 'agents.d', 'a.yaml'), agent(p)),
  };
}

describe('reload pipeline', () => {
  it('runs one reload at a time and coalesces triggers that arrive meanwhile into one more run', async () => {
    let release!: () => void;
    let entered!: () => void;
    let applies = 0;
    const gate = new Promise<void>((r) => (release = r));
    const applying = new Promise<void>((r) => (entered = r));
    const { pipeline, store, edit } = setup(async () => {
      applies++;
      entered();
      if (applies === 1) await gate;
    });
    edit('two');
    const first = pipeline.reload({ source: 'cli', requestId: 'r1' });
    // The first run is applying (past its read, which waits for a quiet file).
    await applying;
    const queued = [
      pipeline.reload({ source: 'cli', requestId: 'r2' }),
      pipeline.reload({ source: 'watcher', requestId: 'r3' }),
      pipeline.reload({ source: 'admin', requestId: 'r4' }),
    ];
    // A save meanwhile: the coalesced run has something to apply (an unchanged one answers the running version).
    edit('three');
    release();
    const [o1, ...rest] = await Promise.all([first, ...queued]);
    expect(applies).toBe(2);
    expect(o1!.ack).toMatchObject({ request_id: 'r1', version: 2 });
    expect(rest.map((o) => [o.ack.request_id, o.ack.version])).toEqual([
      ['r2', 3],
      ['r3', 3],
      ['r4', 3],
    ]);
    expect(store.current().version).toBe(3);
  });

  it('a watcher trigger with nothing changed is skipped; an explicit one always runs', async () => {
    const { pipeline, store, logger } = setup();
    const skipped = await pipeline.reload({ source: 'watcher', skipIfUnchanged: true });
    expect(skipped.skipped).toBe(true);
    expect(store.current().version).toBe(1);
    expect(logger.find('config reload applied')).toHaveLength(0);
    const explicit = await pipeline.reload({ source: 'cli', requestId: 'x' });
    expect(explicit.skipped).toBe(false);
    // Nothing changed on disk: the running version answers.
    expect(explicit.ack.version).toBe(1);
  });

  it('an explicit reload with nothing changed answers the running version and applies nothing', async () => {
    let applies = 0;
    let statuses = 0;
    const { pipeline, store, registry, logger, edit } = setup(
      async () => {
        applies++;
      },
      {
        status: async () => {
          statuses++;
          const stateDb = { field: 'pollers.yaml state_db', reason: 'opened at start', file: 'pollers.yaml' };
          return new Map([['pollers', { restartRequired: [stateDb] }]]);
        },
      },
    );
    const same = await pipeline.reload({ source: 'cli', requestId: 'r1' });
    expect(same.unchanged).toBe(true);
    expect(same.ack).toMatchObject({
      request_id: 'r1',
      version: 1,
      applied: ['a'],
      rejected: [],
      errors: [],
    });
    // What the subsystems report of the running snapshot still reaches the ack.
    expect(same.ack.restart_required).toEqual([
      { field: 'pollers.yaml state_db', reason: 'opened at start', file: 'pollers.yaml' },
    ]);
    expect(applies).toBe(0);
    expect(statuses).toBe(1);
    expect(store.current().version).toBe(1);
    expect(logger.find('config reload found nothing changed')[0]!.fields).toMatchObject({ version: 1 });
    expect(await registry.metrics()).not.toContain('config_reload_applied_total 1');

    edit('two');
    const changed = await pipeline.reload({ source: 'cli' });
    expect([changed.unchanged, changed.ack.version, applies]).toEqual([false, 2, 1]);
    const again = await pipeline.reload({ source: 'admin' });
    expect([again.unchanged, again.ack.version, again.ack.applied, applies]).toEqual([true, 2, ['a'], 1]);
    expect(await registry.metrics()).toContain('config_reload_applied_total 1');
  });

  it('a read of the running version whose resolved content changed (cluster: a host file) is an error, not applied', async () => {
    let applies = 0;
    const { pipeline, store, registry, logger, config } = setup(
      async () => {
        applies++;
      },
      // Cluster mode: the desired bundle is still v1.
      { source: async () => ({ dir: join(root, 'config'), version: 1 }) },
    );
    writeFileSync(join(config, 'llm.yaml'), LLM_YAML('key-5678'));
    const o = await pipeline.reload({ source: 'cli', requestId: 'r1' });
    expect(o.ack.version).toBe(1);
    expect(o.ack.applied).toEqual([]);
    expect(o.ack.errors).toEqual([
      { file: config, reason: expect.stringContaining('[DAEMON_HOST_FILES_CHANGED]') as string },
    ]);
    expect(o.ack.errors[0]!.reason).toContain('agent config push --new-version');
    expect(applies).toBe(0);
    expect(store.current().version).toBe(1);
    expect(logger.find('config reload applied')).toEqual([]);
    expect(logger.find('reload failed')).toEqual([]);
    expect(await registry.metrics()).toMatch(/config_last_reload_successful 0/);
  });

  it('an explicit reload after a rejected read that restored the running bytes is a change', async () => {
    const { pipeline, config, store } = setup();
    writeFileSync(join(config, 'llm.yaml'), LLM_YAML('${file:secrets/k.key}'));
    const rejected = await pipeline.reload({ source: 'cli' });
    expect(rejected.ack.rejected.map((r) => r.agent_id)).toEqual(['a']);
    writeFileSync(join(config, 'llm.yaml'), LLM_YAML('key-1234'));
    const back = await pipeline.reload({ source: 'cli' });
    expect(back.unchanged).toBe(false);
    expect(back.ack).toMatchObject({ version: 2, applied: ['a'], rejected: [] });
    expect(store.current().version).toBe(2);
    expect((await pipeline.reload({ source: 'cli' })).ack.version).toBe(2);
  });

  it('after a rejected read, restoring the running bytes is a change; every read hands on its secret files', async () => {
    const watched: string[][] = [];
    const { pipeline, config, store } = setup(undefined, { watchFiles: (f) => watched.push([...f]) });
    const watcher = { source: 'watcher', skipIfUnchanged: true } as const;
    // The only agent's provider names a key that does not exist yet: nothing applies.
    writeFileSync(join(config, 'llm.yaml'), LLM_YAML('${file:secrets/k.key}'));
    const rejected = await pipeline.reload(watcher);
    expect(rejected.skipped).toBe(false);
    expect(rejected.ack.rejected.map((r) => r.agent_id)).toEqual(['a']);
    expect(store.current().version).toBe(1);
    expect(watched.at(-1)).toEqual([join(root, 'secrets', 'k.key')]);
    // Back to the bytes the running snapshot was built from: not skipped, and it applies.
    writeFileSync(join(config, 'llm.yaml'), LLM_YAML('key-1234'));
    const back = await pipeline.reload(watcher);
    expect(back.skipped).toBe(false);
    expect(back.ack).toMatchObject({ version: 2, applied: ['a'], rejected: [] });
    expect((await pipeline.reload(watcher)).skipped).toBe(true);
  });

  it('logs the spec record and sets the reload metrics', async () => {
    const { pipeline, registry, logger, edit } = setup();
    edit('two');
    await pipeline.reload({ source: 'cli' });
    const rec = logger.find('config reload applied')[0]!;
    expect(rec.level).toBe('info');
    expect(rec.fields).toMatchObject({ version: 2, applied: ['a'], rejected_count: 0 });
    expect(typeof rec.fields.elapsed_ms).toBe('number');
    const text = await registry.metrics();
    expect(text).toContain('config_reload_applied_total 1');
    expect(text).toContain('config_last_reload_successful 1');
    expect(text).toContain('runtime_config_version{agent_id="a"} 2');
    expect(text).toMatch(/config_reload_latency_ms_count 1/);
  });

  it('a failing subsystem is logged and the reload still answers', async () => {
    const { pipeline, logger, edit } = setup(async () => {
      throw new Error('boom key-1234');
    });
    edit('two');
    const o = await pipeline.reload({ source: 'cli' });
    expect(o.ack.version).toBe(2);
    const rec = logger.find('reload apply failed')[0]!;
    expect(rec.fields.err).toBe('boom [redacted]');
  });
});
