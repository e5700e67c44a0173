/** The hooks of a test file against one real Radicale, and the cleanup each of its tests leaves. */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startRadicale, type RadicaleServer } from '../src/testing.js';

export interface RadicaleSuite {
  /** The file's server, started before its first test and stopped after its last. */
  readonly server: RadicaleServer;
  /** Runs `close` after the current test, before what was deferred earlier. */
  defer(close: () => Promise<void>): void;
}

/** Call at the top of a test file: registers the file's `beforeAll`, `afterAll` and `afterEach`. */
export function radicaleSuite(): RadicaleSuite {
  let server: RadicaleServer | undefined;
  beforeAll(async () => {
    server = await startRadicale();
  });
  afterAll(async () => {
    await server?.stop();
  });
  let cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.toReversed()) await c();
    cleanup = [];
  });
  return {
    get server() {
      if (!server) throw new Error('the Radicale of this file starts in beforeAll');
      return server;
    },
    defer: (close) => void cleanup.push(close),
  };
}
