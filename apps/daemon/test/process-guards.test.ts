// The process rules of the daemon, each on its own: signals, uncaught exceptions, Node's warnings.
import { EventEmitter } from 'node:events';
import { createLogger, createMemoryLogger, type Logger } from '@agent/log';
import { describe, expect, it } from 'vitest';
import { routeWarnings, signalStopper, uncaughtLogger } from '../src/process-guards.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function target(stop: () => Promise<void>, boundMs = 10_000) {
  const logger = createMemoryLogger();
  return { logger, t: { stop, logger: logger as Logger, boundMs } };
}

describe('signals', () => {
  it('the first signal stops cleanly and exits 0', async () => {
    const exits: number[] = [];
    const s = signalStopper((c) => exits.push(c));
    let stopped = 0;
    const { t, logger } = target(async () => {
      stopped++;
    });
    s.attach(t);
    s.onSignal('SIGTERM');
    await sleep(10);
    expect(stopped).toBe(1);
    expect(exits).toEqual([0]);
    expect(logger.find('signal received')[0]?.fields).toEqual({ signal: 'SIGTERM' });
  });

  it('a second signal exits at once with 1', () => {
    const exits: number[] = [];
    const s = signalStopper((c) => exits.push(c));
    const { t, logger } = target(() => new Promise(() => {}));
    s.attach(t);
    s.onSignal('SIGINT');
    s.onSignal('SIGINT');
    expect(exits).toEqual([1]);
    expect(logger.find('second signal: exiting now')).toHaveLength(1);
  });

  it('a stop that hangs past its bound still exits, with 1', async () => {
    const exits: number[] = [];
    const s = signalStopper((c) => exits.push(c));
    const { t, logger } = target(() => new Promise(() => {}), 50);
    s.attach(t);
    s.onSignal('SIGTERM');
    await sleep(20);
    expect(exits).toEqual([]);
    await sleep(100);
    expect(exits).toEqual([1]);
    expect(logger.find('daemon stop timed out: exiting now')[0]?.fields).toEqual({ bound_ms: 50 });
  });

  it('a stop that fails exits 1', async () => {
    const exits: number[] = [];
    const s = signalStopper((c) => exits.push(c));
    const { t, logger } = target(() => Promise.reject(new Error('stuck socket')));
    s.attach(t);
    s.onSignal('SIGTERM');
    await sleep(10);
    expect(exits).toEqual([1]);
    expect(logger.find('daemon stop failed')[0]?.fields).toEqual({ err: 'stuck socket' });
  });

  it('a signal during start-up stops the daemon as soon as it is up', async () => {
    const exits: number[] = [];
    const s = signalStopper((c) => exits.push(c));
    s.onSignal('SIGTERM');
    let stopped = 0;
    const { t } = target(async () => {
      stopped++;
    });
    s.attach(t);
    await sleep(10);
    expect(stopped).toBe(1);
    expect(exits).toEqual([0]);
  });
});

describe('uncaught exceptions', () => {
  it('are logged, and the listener never re-enters itself', () => {
    const lines: string[] = [];
    let onUncaught: ((err: unknown) => void) | undefined;
    // A sink that raises a new uncaught exception while writing, like a failed write to a closed stderr.
    const logger = createLogger({
      write: (l) => {
        lines.push(l);
        onUncaught?.(new Error('write EPIPE'));
      },
    });
    const handler = uncaughtLogger(logger);
    onUncaught = handler;
    handler(new Error('boom'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/level=error msg="uncaught exception" err=boom$/);
    handler(new Error('later'));
    expect(lines).toHaveLength(2);
  });
});

describe("Node's warnings", () => {
  it('replace the default printer; early ones wait for the logger', () => {
    const source = new EventEmitter();
    const printed: string[] = [];
    source.on('warning', (w: Error) => printed.push(w.message));
    const route = routeWarnings(source);
    const early = Object.assign(new Error('early'), { name: 'DeprecationWarning', code: 'DEP0001' });
    source.emit('warning', early);
    const log = createMemoryLogger();
    route.attach(log);
    source.emit('warning', Object.assign(new Error('two\nlines'), { name: 'TestWarning' }));
    expect(printed).toEqual([]);
    expect(log.find('node warning').map((r) => r.fields)).toEqual([
      { name: 'DeprecationWarning', message: 'early', code: 'DEP0001' },
      { name: 'TestWarning', message: 'two\nlines', code: undefined },
    ]);
  });
});
