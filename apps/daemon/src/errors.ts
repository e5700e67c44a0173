/** Codes of the daemon itself (the packages keep their own); `docs/errors.md` is generated from this. */

/** What one code means and what the operator does about it. */
interface DaemonErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

/** @public Read from the build by scripts/gen-errors-doc.mjs (docs/errors.md). */
export const DAEMON_ERROR_CODES = {
  DAEMON_CONFIG_INVALID: {
    meaning:
      'The configuration cannot start the daemon (a global file is invalid or the config directory is missing); every problem was logged before exit 1.',
    action: 'Fix the files named in the log lines, or run `agent --check-config`.',
  },
  DAEMON_HOST_FILES_CHANGED: {
    meaning:
      "Cluster mode: a reload found that what this host resolves from the running config bundle changed (a secret file, an environment variable, a host-local file such as memory.yaml), but the bundle's version is the one running; a daemon applies a change only as a newer version, so nothing was applied.",
    action:
      'Change the files on every host, then run `agent config push --new-version`: every daemon applies them as the next version.',
  },
} as const satisfies Record<string, DaemonErrorInfo>;

export type DaemonErrorCode = keyof typeof DAEMON_ERROR_CODES;
