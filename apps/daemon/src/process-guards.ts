/**
 * What the daemon process does with signals, uncaught exceptions and Node's own warnings. Kept apart from
 * `bin.ts` so that each rule can be tested without a process.
 */
import type { Logger } from '@agent/log';
import { setTimer } from '@agent/timers';

/** Past `shutdown_grace_ms` plus this, a stop that still hangs ends with exit 1. */
export const STOP_MARGIN_MS = 5000;

interface StopTarget {
  stop(): Promise<void>;
  logger: Logger;
  /** How long a clean stop may take before the process exits anyway. */
  boundMs: number;
}

export interface SignalStopper {
  /** The SIGTERM / SIGINT listener. */
  onSignal(signal: NodeJS.Signals): void;
  /** The daemon is up; a signal that came while it was starting stops it now. */
  attach(target: StopTarget): void;
}

/**
 * The first signal starts a clean stop (exit 0 when it is done, 1 when it fails or outlasts its bound); a
 * second signal exits at once with 1. Installed before start-up, so that a signal during start is not lost.
 */
export function signalStopper(exit: (code: number) => void): SignalStopper {
  let signals = 0;
  let pending: NodeJS.Signals | undefined;
  let target: StopTarget | undefined;
  const begin = (t: StopTarget, signal: NodeJS.Signals): void => {
    t.logger.info('signal received', { signal });
    // Not unref'd: a stop that hangs on nothing (a promise that never settles) must still end the process.
    const timer = setTimer(() => {
      t.logger.error('daemon stop timed out: exiting now', { bound_ms: t.boundMs });
      exit(1);
    }, t.boundMs);
    t.stop().then(
      () => {
        timer.cancel();
        exit(0);
      },
      (err: unknown) => {
        timer.cancel();
        t.logger.error('daemon stop failed', { err: err instanceof Error ? err.message : String(err) });
        exit(1);
      },
    );
  };
  return {
    onSignal(signal) {
      signals++;
      if (signals > 1) {
        target?.logger.warn('second signal: exiting now', { signal });
        exit(1);
        return;
      }
      if (target) begin(target, signal);
      else pending = signal;
    },
    attach(t) {
      target = t;
      if (pending) begin(t, pending);
    },
  };
}

/**
 * The `uncaughtException` listener: logs the error and keeps the daemon running. It never re-enters itself: an
 * exception raised while one is being logged is dropped (the logger never throws, and stops writing once its
 * stream is closed, so a closed stderr cannot feed this listener).
 */
export function uncaughtLogger(logger: Logger): (err: unknown) => void {
  let busy = false;
  return (err) => {
    if (busy) return;
    busy = true;
    try {
      logger.error('uncaught exception', { err: err instanceof Error ? err.message : String(err) });
    } catch {
      // Nothing left to report to.
    } finally {
      busy = false;
    }
  };
}

interface WarningSource {
  on(event: 'warning', listener: (w: Error) => void): unknown;
  removeAllListeners(event: 'warning'): unknown;
}

const log = (l: Logger, w: Error): void =>
  l.warn('node warning', {
    name: w.name,
    message: w.message,
    code: (w as { code?: unknown }).code,
  });

/** At most this many warnings wait for the logger; more during start-up would be a bug of their own. */
const MAX_EARLY_WARNINGS = 20;

/**
 * Node's warnings (deprecations, experimental features, listener leaks) as one log record each
 * (`msg="node warning" name= message= code=`) instead of the default multi-line text on stderr. Warnings
 * raised before the logger exists wait for `attach`.
 */
export function routeWarnings(source: WarningSource = process): { attach(logger: Logger): void } {
  let logger: Logger | undefined;
  const early: Error[] = [];
  source.removeAllListeners('warning');
  source.on('warning', (w) => {
    if (logger) log(logger, w);
    else if (early.length < MAX_EARLY_WARNINGS) early.push(w);
  });
  return {
    attach(l) {
      logger = l;
      for (const w of early.splice(0)) log(l, w);
    },
  };
}
