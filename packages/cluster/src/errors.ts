/** What one code means and what to do about it. */
export interface ClusterErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

/** Issues the `cluster.yaml` reader reports beside the config loader's generic ones. */
export const CLUSTER_FILE_CODES = {
  CLUSTER_NEEDS_NATS: {
    meaning:
      'Cluster mode is enabled in `cluster.yaml` but `broker.yaml` is not `kind: nats`: reloads, acks and hints could not reach the other daemons.',
    action:
      'Set `kind: nats` and `url:` in `broker.yaml` on every host, or set `enabled: false` in `cluster.yaml`.',
  },
  CLUSTER_BAD_WINDOW: {
    meaning:
      '`heartbeat.stale_after_secs` is shorter than three heartbeat intervals: one slow heartbeat would declare a live daemon dead.',
    action: 'Raise `stale_after_secs` to at least 3 × `interval_secs`, or lower `interval_secs`.',
  },
} as const satisfies Record<string, ClusterErrorInfo>;

/** Every failure this package reports itself carries one of these stable codes. */
export const CLUSTER_ERROR_CODES = {
  CLUSTER_BUNDLE_MISSING: {
    meaning: 'A config bundle version was asked for that the database does not hold.',
    action:
      'Push the config again with `agent config push`; `agent cluster status` shows the desired version.',
  },
  CLUSTER_BUNDLE_BAD_PATH: {
    meaning:
      'A config bundle names a file outside the cluster-wide set (agents, `llm.yaml`, `pollers.yaml`, plugins), or a path that leaves the config directory.',
    action:
      'Push only cluster-wide files; host-local files (`cluster.yaml`, `broker.yaml`, `runtime.yaml`, `memory.yaml`, secrets) stay on each host.',
  },
  CLUSTER_DUPLICATE_ID: {
    meaning:
      'Another daemon that is still heartbeating already uses this `daemon_id`: two hosts would share one identity and its leases.',
    action:
      'Give each host its own `daemon_id` in `cluster.yaml` (default: the host name); a stopped daemon frees its id at once, a crashed one after `stale_after_secs`.',
  },
  CLUSTER_NOT_STARTED: {
    meaning: 'A membership or leader call was made before `start()` or after `stop()`.',
    action: 'Report it: the daemon starts the cluster parts before it uses them.',
  },
} as const satisfies Record<string, ClusterErrorInfo>;

export type ClusterErrorCode = keyof typeof CLUSTER_ERROR_CODES;

export class ClusterError extends Error {
  override readonly name = 'ClusterError';
  constructor(
    readonly code: ClusterErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${message} [${code}]`, options);
  }
}
