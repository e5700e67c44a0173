// A skewed wall clock for one daemon: libfaketime (Debian's `faketime`) preloaded into the process shifts
// Date.now() and friends, while FAKETIME_DONT_FAKE_MONOTONIC=1 keeps the monotonic clock true, so Node's
// timers still fire on time. The library is preloaded directly rather than through the `faketime` command:
// that command forks, so its PID is not the daemon's, and a signal to it (SIGKILL, SIGSTOP) would miss the
// daemon.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const LIBRARY = join('faketime', 'libfaketime.so.1');

/** Where Debian (`/usr/lib/<multiarch>/faketime`) and a source install put the library. */
function libraryCandidates(): string[] {
  const multiarch = existsSync('/usr/lib')
    ? readdirSync('/usr/lib')
        .filter((d) => d.endsWith('-linux-gnu'))
        .map((d) => join('/usr/lib', d, LIBRARY))
    : [];
  return [...multiarch, join('/usr/lib', LIBRARY), join('/usr/local/lib', LIBRARY)];
}

/** The path of libfaketime; a clear error (never a skip) when it is not installed. */
export function faketimeLibrary(candidates: string[] = libraryCandidates()): string {
  const found = candidates.find((p) => existsSync(p));
  if (found !== undefined) return found;
  throw new Error(
    `libfaketime not found in ${candidates.join(', ')}; install it (Debian: apt-get install faketime) for the skew fault`,
  );
}

export interface SkewedCommand {
  command: string;
  args: string[];
  /** Add to the child's environment. */
  env: Record<string, string>;
}

/** `command args…` run with its wall clock `skewSecs` seconds off (negative: behind), as the same process. */
export function skewedCommand(command: string, args: string[], skewSecs: number): SkewedCommand {
  if (!Number.isInteger(skewSecs)) throw new Error(`skew must be whole seconds, got ${skewSecs}`);
  return {
    command,
    args,
    env: {
      LD_PRELOAD: faketimeLibrary(),
      FAKETIME: `${skewSecs >= 0 ? '+' : ''}${skewSecs}s`,
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
  };
}
