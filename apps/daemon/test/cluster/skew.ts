// A skewed wall clock for one daemon: libfaketime (Debian's `faketime`) shifts Date.now() and friends, while
// FAKETIME_DONT_FAKE_MONOTONIC=1 keeps the monotonic clock true, so Node's timers still fire on time.
import { execFileSync } from 'node:child_process';

/** The `faketime` wrapper's path; a clear error (never a skip) when it is not installed. */
export function faketimeBin(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v faketime'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      'faketime not found on PATH; install it (Debian: apt-get install faketime) for the skew fault',
    );
  }
}

export interface SkewedCommand {
  command: string;
  args: string[];
  /** Add to the child's environment. */
  env: Record<string, string>;
}

/** `command args…` run with its wall clock `skewSecs` seconds off (negative: behind). */
export function skewedCommand(command: string, args: string[], skewSecs: number): SkewedCommand {
  if (!Number.isInteger(skewSecs)) throw new Error(`skew must be whole seconds, got ${skewSecs}`);
  const offset = `${skewSecs >= 0 ? '+' : ''}${skewSecs}s`;
  return {
    command: faketimeBin(),
    args: ['-f', offset, command, ...args],
    env: { FAKETIME_DONT_FAKE_MONOTONIC: '1' },
  };
}
