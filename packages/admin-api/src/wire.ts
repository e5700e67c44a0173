/**
 * The admin API on the wire: the JSON of its answers, for this server and its clients (`@agent/cli`).
 * Types only: a client imports them with `import type` and loads nothing of the server.
 */

/**
 * A job as listed, and the answer of pause, resume and reset. The routes rely on the required fields; the
 * daemon's poller service sends the optional ones too, and any other field is passed through.
 */
export interface AdminJobSummary {
  id: string;
  kind: string;
  agent: string;
  schedule: string;
  paused: boolean;
  breaker: string;
  consecutive_errors: number;
  last_status: string | null;
  last_error?: string | null;
  last_run_at: string | null;
  next_run_at: string | null;
  /** `stale` while the job's entry in pollers.yaml is rejected and its previous definition runs. */
  definition?: 'current' | 'stale';
  /** Why the current entry is rejected (located), while `definition` is `stale`. */
  definition_error?: string | null;
  /**
   * Cluster mode only (absent on a single host): the lease holder ticking the job now, on any daemon
   * (`<daemon_id>#<incarnation>`), or `null` while no daemon holds it.
   */
  holder?: string | null;
  /** Cluster mode only: when that lease expires (database clock), or `null` while no daemon holds it. */
  lease_expires_at?: string | null;
}

/** A job of pollers.yaml that is rejected; `running` when its previous definition keeps running. */
export interface AdminRejectedJob {
  id: string;
  errors: string[];
  running: boolean;
}

/** `GET /admin/pollers`. */
export interface AdminJobList {
  jobs: readonly AdminJobSummary[];
  rejected: readonly AdminRejectedJob[];
}

/** `GET /admin/pollers/:id`: the job, its config with secret values hidden, and its state. */
export interface AdminJobDetail extends AdminJobSummary {
  config: Record<string, unknown>;
  deliver?: { channel: string; to: string };
  failure_to?: { channel: string; to: string } | null;
  cursor?: { present: boolean; bytes: number };
  seen_ids?: number;
  baselined?: boolean;
  last_failure_alert_at?: string | null;
  lease?: { holder: string | null; epoch: number; expires_at: string } | null;
  /** The job's last deliveries since the daemon started, newest first. */
  recent_deliveries?: { item: string; channel: string; to: string; at: string; ok: boolean }[];
  /** The job's last warnings and errors since the daemon started, newest first. */
  recent_errors?: { at: string; message: string; reason: string | null }[];
}

/** `POST /admin/pollers/:id/run`. */
export interface AdminRunResult {
  status: string;
  items_seen: number;
  items_dispatched: number;
  error?: string;
}

/** `POST /admin/pollers/reload`. */
export interface ReloadPlanJson {
  add: string[];
  replace: string[];
  remove: string[];
  keep: string[];
  rejected: { id: string; errors: string[] }[];
  /** Files the reload could not apply (e.g. a YAML error in pollers.yaml: its jobs run as before). */
  errors?: string[];
  /** `true` for a preview (`?dry_run=1`): nothing was applied. */
  dry_run?: boolean;
  /** The configuration version the daemon runs on after this reload (for a preview: would run on). */
  version?: number;
  /** What the reload made (or would make) of the agents, with located reasons. */
  agents?: {
    applied: string[];
    rejected: { agent_id: string; reason: string }[];
    restart_required: RestartRequiredJson[];
  };
}

/** A changed field the reload did not apply: it waits for a restart of the daemon. */
export interface RestartRequiredJson {
  /** The agent whose file changed; absent for the other files. */
  agent_id?: string;
  /** `workspace`, `agent added`, `runtime.yaml metrics.listen`, `pollers.yaml state_db`, … */
  field: string;
  /** What the running daemon keeps until it restarts (absent in answers of daemons before it was added). */
  reason?: string;
  /** The file of the change, as the daemon names config files. */
  file?: string;
  /** The line of the changed key in `file`, when the key is there. */
  line?: number;
}

/** `POST /admin/credentials/reload`. */
export interface CredentialsReloadResult {
  /** Channel plugins whose clients were rebuilt. */
  channels: string[];
  /** Whether the pollers' cached provider clients were dropped (false while the subsystem is off). */
  pollers: boolean;
}

/** `GET /admin/info`: who the daemon is and where it keeps things (absolute paths). */
export interface AdminInfo {
  version: string;
  pid: number;
  /** RFC 3339. */
  started_at: string;
  config_dir: string;
  data_dir: string;
  broker: { kind: 'local' | 'nats'; socket?: string };
  /** The metrics endpoint, when `runtime.yaml` `metrics.enabled`. */
  metrics_url?: string;
}

/** `GET /admin/agents`: every agent as it runs now. */
export interface AdminAgent {
  id: string;
  /** The configuration version the agent runs on. */
  version: number;
  model: { provider: string; name: string };
  bindings: {
    plugin: string;
    instance: string;
    allowed_tools: string[];
    /** Channel -> recipients the agent may send to. */
    outbound_allowlist: Record<string, string[]>;
  }[];
}

/** One applied configuration version. */
export interface AdminReloadRecord {
  version: number;
  /** RFC 3339. */
  at: string;
  /** What asked for it: `start`, `cli`, `watcher`, `admin` or `signal` (coalesced triggers are all named). */
  triggers: string[];
  applied: number;
  rejected: number;
}

/** `GET /admin/reloads`: the running version, how the last load went, and the applied versions, newest first. */
export interface AdminReloads {
  version: number;
  last_reload_successful: boolean;
  history: AdminReloadRecord[];
}

/** `GET /admin/agents`. */
export interface AdminAgentList {
  agents: AdminAgent[];
  /** Agents whose file is invalid and that run no definition, with the located reason. */
  invalid: { id: string; reason: string }[];
}

/** The one error body every endpoint answers with. */
export interface AdminErrorBody {
  error: { code: string; message: string };
}

/** `GET /admin/cluster`: the cluster as PostgreSQL knows it. */
export interface AdminClusterStatus {
  desired_config_version: number;
  leader: { daemon_id: string; term: number } | null;
  members: {
    daemon_id: string;
    host: string;
    version: string;
    state: 'live' | 'stale' | 'left';
    seen_ago_ms: number;
    applied_config_version: number | null;
    applied_config_hash: string | null;
    ticks_in_flight: number;
    /** Null when the daemon cannot tell. */
    jobs_held: number | null;
    /** Inbound chat partitions this member runs the turns of; null when the daemon cannot tell. */
    inbound_partitions: number | null;
  }[];
  /**
   * The daemon polling each single-consumer channel instance (a `chat_b` bot) now, by plugin and instance;
   * empty while none does; null when the daemon cannot tell.
   */
  channel_owners: AdminChannelOwner[] | null;
}

/** The owner lease `channel:<plugin>/<instance>` of `GET /admin/cluster`; it expires unless renewed. */
export interface AdminChannelOwner {
  plugin: string;
  instance: string;
  daemon_id: string;
  term: number;
  expires_in_ms: number;
}
