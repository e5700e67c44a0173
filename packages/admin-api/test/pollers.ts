/**
 * A real poller service with a tiny kind, plus a spy that counts every call: on an in-memory store, or in
 * cluster mode on a shared PostgreSQL job table.
 */
import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import { definePollerKind, withBaseConfig } from '@agent/poller-core';
import { createKindRegistry, createRunner, type Runner } from '@agent/poller-runtime';
import type { ClaimingStore } from '@agent/poller-runtime/postgres';
import {
  createFakeClock,
  createMemoryStateStore,
  createTestDispatcher,
  createTestSnapshot,
  type TestDispatcher,
} from '@agent/poller-runtime/testing';
import { Registry } from 'prom-client';
import type { AdminPollers } from '../src/index.js';

export const SECRET = 'sk-live-0123456789';

export interface PollerFixture {
  service: Runner;
  spy: AdminPollers;
  /** Calls that reached the service, by method. */
  calls: string[];
  dispatcher: TestDispatcher;
  logger: MemoryLogger;
  /** Items the next tick returns. */
  items: string[];
  /** While set, every tick waits for it. */
  gate: Promise<void> | null;
}

/** Cluster mode: the daemon's lease holder id and the shared job table. */
export interface ClusterFixtureOptions {
  holderId: string;
  store: ClaimingStore;
}

export async function startPollers(cluster?: ClusterFixtureOptions): Promise<PollerFixture> {
  const fixture = { items: [] as string[], gate: null } as PollerFixture;
  const kind = definePollerKind({
    kind: 'counter',
    apiVersion: 1,
    configSchema: withBaseConfig({
      additionalProperties: false,
      properties: {
        source: { type: 'string' },
        api_key: { type: 'string' },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
      },
    }),
    placeholders: ['title'],
    async tick() {
      await fixture.gate;
      return { items: fixture.items.map((id) => ({ id, fields: { title: `item ${id}` } })) };
    },
  });
  const snapshot = createTestSnapshot({
    secrets: [SECRET],
    jobs: ['alpha', 'beta'].map((id) => ({
      id,
      kind: 'counter',
      agent: 'assistant',
      schedule: { every_secs: 60 },
      config: {
        deliver: { channel: 'chat_a', to: 'u1' },
        message_template: 'New: {title}',
        source: `https://example.test/${id}?key=${SECRET}`,
        api_key: SECRET,
        headers: { Authorization: `Bearer ${SECRET}`, Accept: 'application/json' },
      },
    })),
  });
  const logger = createMemoryLogger();
  const dispatcher = createTestDispatcher();
  const service = createRunner({
    snapshot,
    registry: createKindRegistry([kind]),
    store: cluster?.store ?? createMemoryStateStore(),
    dispatcher,
    metrics: new Registry(),
    logger,
    holderId: cluster?.holderId ?? 'test:1',
    random: () => 0,
    ...(cluster
      ? { cluster: { store: cluster.store, configVersion: () => 1, trusted: () => true, pollMaxMs: 100 } }
      : { clock: createFakeClock() }),
  });
  await service.start();
  const calls: string[] = [];
  const spy: AdminPollers = {
    list: () => (calls.push('list'), service.list()),
    show: (id) => (calls.push('show'), service.show(id)),
    run: (id) => (calls.push('run'), service.run(id)),
    pause: (id) => (calls.push('pause'), service.pause(id)),
    resume: (id) => (calls.push('resume'), service.resume(id)),
    reset: (id) => (calls.push('reset'), service.reset(id)),
  };
  return Object.assign(fixture, { service, spy, calls, dispatcher, logger });
}
