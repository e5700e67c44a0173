/** Where commands write and how they end; injected so that commands are testable in-process. */
export interface CliIO {
  out(line: string): void;
  err(line: string): void;
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Colour only on a terminal, and never with NO_COLOR set. */
  color: boolean;
  setExitCode(code: number): void;
}

export function processIO(): CliIO {
  return {
    out: (l) => process.stdout.write(l + '\n'),
    err: (l) => process.stderr.write(l + '\n'),
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
