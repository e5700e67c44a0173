/**
 * The kind as a third party ships it: resolved by package name from a directory inside the workspace
 * (like the daemon's config dir), loaded from its BUILT output, registered, and run end to end.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createKindRegistry,
  createRunner,
  loadKindPackages,
  agentDirectory,
  pollersOf,
  validatePollers,
} from '@agent/poller-runtime';
import {
  createFakeClock,
  createMemoryLogger,
  createMemoryStateStore,
  createMetricsRegistry,
  createTestDispatcher,
  createTestSnapshot,
} from '@agent/poller-runtime/testing';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const configDir = join(here, 'config');

describe('loading @agent/example-poller-kind as a kind package', () => {
  it('is built (run pnpm exec tsc -b examples/poller-kind-example first)', () => {
    expect(existsSync(join(here, '..', 'dist', 'index.js'))).toBe(true);
  });

  it('registers through loadKindPackages and runs a job end to end with the memory store', async () => {
    const registry = createKindRegistry();
    const loaded = await loadKindPackages(registry, ['@agent/example-poller-kind'], { fromDir: configDir });
    expect(loaded).toEqual({
      loaded: [{ package: '@agent/example-poller-kind', kinds: ['example_counter'] }],
      failed: [],
    });
    expect(registry.originOf('example_counter')).toBe('@agent/example-poller-kind');

    const clock = createFakeClock('2026-01-01T00:00:00Z');
    const store = createMemoryStateStore({ now: clock.now });
    const dispatcher = createTestDispatcher();
    const snapshot = createTestSnapshot({
      agents: { assistant: { channels: ['log'] } },
      jobs: [
        {
          id: 'count',
          kind: 'example_counter',
          agent: 'assistant',
          schedule: { every_secs: 60 },
          config: { deliver: { channel: 'log', to: 'me' }, message_template: 'Count {n}' },
        },
      ],
    });
    const service = createRunner({
      snapshot,
      registry,
      store,
      dispatcher,
      metrics: createMetricsRegistry(),
      logger: createMemoryLogger(),
      clock,
      random: () => 0,
      holderId: 'test',
    });
    await service.start();
    await clock.advance(0); // baseline: counter-1 recorded, nothing sent
    await clock.advance(60_000);
    await clock.advance(60_000);
    expect(dispatcher.texts()).toEqual(['Count 2', 'Count 3']);
    expect((await store.load('count'))!.cursor).toEqual({ next: 4 });
    expect(await service.run('count')).toEqual({ status: 'ok', items_seen: 1, items_dispatched: 1 });
    await service.stop();
  });

  it('a package that cannot be loaded rejects only the jobs of its kind, naming the package', async () => {
    const registry = createKindRegistry();
    const r = await loadKindPackages(registry, ['@agent/example-poller-kind', '@acme/missing-poller-kind'], {
      fromDir: configDir,
    });
    expect(r.failed).toEqual([
      expect.objectContaining({ package: '@acme/missing-poller-kind', code: 'POLLER_KIND_PACKAGE' }),
    ]);
    const snapshot = createTestSnapshot({
      agents: { assistant: { channels: ['log'] } },
      jobs: [
        {
          id: 'good',
          kind: 'example_counter',
          agent: 'assistant',
          schedule: { every_secs: 60 },
          config: { deliver: { channel: 'log', to: 'me' }, message_template: '{n}' },
        },
        {
          id: 'bad',
          kind: 'acme',
          agent: 'assistant',
          schedule: { every_secs: 60 },
          config: { deliver: { channel: 'log', to: 'me' }, message_template: 'x' },
        },
      ],
    });
    const v = validatePollers(pollersOf(snapshot), agentDirectory(snapshot), registry);
    expect(v.valid.map((d) => d.id)).toEqual(['good']);
    expect(v.rejected[0]!.id).toBe('bad');
    expect(v.rejected[0]!.issues[0]!.hint).toContain('@acme/missing-poller-kind');
  });
});
