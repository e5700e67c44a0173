/** Where commands write and how they end; injected so that commands are testable in-process. */
export interface CliIO {
  /** Writes a line (or several, joined by newlines) to stdout. */
  out(line: string): void;
  err(line: string): void;
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Colour only on a terminal, and never with NO_COLOR set. */
  color: boolean;
  setExitCode(code: number): void;
}

const closed = { stdout: false, stderr: false };
let guarded = false;
let exitOnClosedStdout = true;

const isClosedPipe = (err: NodeJS.ErrnoException): boolean =>
  err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED' || err.code === 'ERR_STREAM_WRITE_AFTER_END';

/**
 * 'error' listeners on stdout and stderr. Without them a write to a closed pipe (`agent pollers list | head -1`)
 * is an uncaught exception with a stack trace. A client whose stdout reader is gone stops quietly with its
 * current exit code, as git and kubectl do; a closed stderr only stops the writing.
 */
function guardStdio(): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    closed.stdout = true;
    if (!exitOnClosedStdout) return;
    if (!isClosedPipe(err)) {
      writeTo('stderr', `agent: cannot write the output: ${err.message}`);
      process.exitCode = 1;
    }
    process.exit();
  });
  process.stderr.on('error', () => {
    closed.stderr = true;
  });
}

function writeTo(name: 'stdout' | 'stderr', line: string): void {
  const stream = process[name];
  if (closed[name] || stream.destroyed) return;
  try {
    stream.write(line + '\n');
  } catch {
    closed[name] = true;
  }
}

/** The daemon keeps running when nobody reads its stdout any more (its logs go to stderr anyway). */
export function keepRunningOnClosedStdout(): void {
  exitOnClosedStdout = false;
}

export function processIO(): CliIO {
  guardStdio();
  return {
    out: (l) => writeTo('stdout', l),
    err: (l) => writeTo('stderr', l),
    cwd: process.cwd(),
    env: process.env,
    color: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
    setExitCode: (c) => {
      process.exitCode = c;
    },
  };
}

export const paint = {
  green: (s: string, on: boolean): string => (on ? `\x1b[32m${s}\x1b[39m` : s),
  red: (s: string, on: boolean): string => (on ? `\x1b[31m${s}\x1b[39m` : s),
  yellow: (s: string, on: boolean): string => (on ? `\x1b[33m${s}\x1b[39m` : s),
};
