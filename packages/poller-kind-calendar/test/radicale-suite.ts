/**
 * The hooks of a test file against one real Radicale, the cleanup each of its tests leaves, and the real
 * poller service reading the server's calendar.
 */
import type { ServiceHarness, TestJobSpec } from '@agent/poller-runtime/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { calendarPollerKind } from '../src/index.js';
import { startRadicale, type RadicaleServer } from '../src/testing.js';
import { serviceHarness } from './service-harness.js';

export interface RadicaleSuite {
  /** The file's server, started before its first test and stopped after its last. */
  readonly server: RadicaleServer;
  /** Runs `close` after the current test, before what was deferred earlier. */
  defer(close: () => Promise<void>): void;
  /** The block of `accounts.<name>` in plugins/calendar.yaml that reads the server's calendar; `over` replaces fields. */
  account(over?: Record<string, unknown>): Record<string, unknown>;
  /**
   * The real poller service around `jobs`, started, its clock at 2026-03-10 12:00 UTC: the agent `assistant`
   * (channels `chat_a` and `chat_b`) reads `account(over)` as `home`. Closed after the test.
   */
  service(jobs: TestJobSpec[], over?: Record<string, unknown>): Promise<ServiceHarness>;
}

/** Call at the top of a test file: registers the file's `beforeAll`, `afterAll` and `afterEach`. */
export function radicaleSuite(): RadicaleSuite {
  let started: RadicaleServer | undefined;
  beforeAll(async () => {
    started = await startRadicale();
  });
  afterAll(async () => {
    await started?.stop();
  });
  let cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.toReversed()) await c();
    cleanup = [];
  });
  const server = () => {
    if (!started) throw new Error('the Radicale of this file starts in beforeAll');
    return started;
  };
  const suite: RadicaleSuite = {
    get server() {
      return server();
    },
    defer: (close) => void cleanup.push(close),
    account: (over = {}) => ({
      provider: 'caldav',
      url: server().calendarUrl,
      user: server().user,
      password: server().password,
      allow_private_networks: true,
      ...over,
    }),
    async service(jobs, over) {
      const h = serviceHarness(calendarPollerKind, {
        jobs,
        start: '2026-03-10T12:00:00Z',
        agents: { assistant: { channels: ['chat_a', 'chat_b'], credentials: { calendar: 'home' } } },
        accounts: { calendar: { home: suite.account(over) } },
        secrets: [server().password],
      });
      suite.defer(() => h.close());
      await h.service.start();
      return h;
    },
  };
  return suite;
}
