/**
 * The one table of admin endpoints. The app routes from it (and answers 405 with `Allow` from it), and
 * `renderAdminApiDocs` writes `docs/admin-api.md` from it, so code and docs cannot drift apart.
 */

export type AdminRouteName =
  | 'listPollers'
  | 'showPoller'
  | 'runPoller'
  | 'pausePoller'
  | 'resumePoller'
  | 'resetPoller'
  | 'reloadPollers'
  | 'reloadCredentials'
  | 'info'
  | 'agents'
  | 'reloads'
  | 'cluster';

export interface AdminRoute {
  name: AdminRouteName;
  method: 'GET' | 'POST';
  /** Hono path syntax (`:id`). */
  path: string;
  purpose: string;
  /** Request body, as documented. */
  request: string;
  /** Status -> what the body is. */
  responses: { status: number; body: string }[];
  /** Part of the poller subsystem: 404 while it is off. */
  pollers: boolean;
  /** Changes state: POST rules (JSON or empty body) apply, and the call is logged. */
  mutation: boolean;
}

const UNKNOWN = { status: 404, body: '`ADMIN_UNKNOWN_JOB`: no job with this id.' };
const STOPPING = { status: 409, body: '`ADMIN_CONFLICT`: the poller service is stopping.' };
const SUMMARY =
  "`JobSummary`: `{id, kind, agent, schedule, paused, breaker, breaker_state, consecutive_errors, last_status, last_error, last_run_at, next_run_at, definition, definition_error}`; `definition` is `stale` while the job's entry in pollers.yaml is rejected and its previous definition keeps running (`definition_error` says why). In cluster mode the state comes from the shared job table (any daemon answers for the whole cluster) and two more fields say who ticks the job now: `holder` (the lease holder, `<daemon_id>#<incarnation>`, or `null`) and `lease_expires_at` (or `null`); a single-host daemon sends neither.";

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  {
    name: 'listPollers',
    method: 'GET',
    path: '/admin/pollers',
    purpose: 'List every loaded job with its status, sorted by id, and every rejected job of pollers.yaml.',
    request: 'none',
    responses: [
      {
        status: 200,
        body: `\`{"jobs": [JobSummary, ...], "rejected": [{"id", "errors": [string], "running": bool}]}\` where ${SUMMARY}`,
      },
    ],
    pollers: true,
    mutation: false,
  },
  {
    name: 'reloadPollers',
    method: 'POST',
    path: '/admin/pollers/reload',
    purpose:
      'Re-read the config directory and apply the poller diff. Every job is validated before any running job is touched; an invalid job keeps running on its old definition. With `?dry_run=1` (a preview) the same pipeline reads, validates and plans, then stops: nothing is applied, no version is minted, no job is touched.',
    request: 'empty, or `{}`; query `dry_run=1` for a preview',
    responses: [
      {
        status: 200,
        body: '`ReloadPlan` of this reload: `{"add": [id], "replace": [id], "remove": [id], "keep": [id], "rejected": [{"id", "errors": [string]}], "errors": [string], "dry_run": bool, "version", "agents": {"applied": [id], "rejected": [{"agent_id", "reason"}], "restart_required": [{"agent_id"?, "field", "reason", "file"?, "line"?}]}}`, every list sorted. A restart-required entry says what the running daemon keeps until it restarts (`reason`), the file of the change and the line of the changed key when it is there. A rejected job that was running is in `keep` too (its previous definition keeps running). `errors` names files the reload could not apply, such as a YAML error in pollers.yaml (its jobs then run as before). `version` is the configuration version the daemon runs on after the reload (a preview: would run on).',
      },
      {
        status: 400,
        body: '`ADMIN_BAD_REQUEST`: nothing was applied (a global file is invalid, every agent was rejected, or pollers.yaml turned the subsystem off, which needs a restart; a preview: nothing would be); the message lists the located reasons. Also a `dry_run` other than `1`, `true`, `0` or `false`.',
      },
    ],
    pollers: true,
    mutation: true,
  },
  {
    name: 'showPoller',
    method: 'GET',
    path: '/admin/pollers/:id',
    purpose: 'One job in detail.',
    request: 'none',
    responses: [
      {
        status: 200,
        body: '`JobDetail`: `JobSummary` plus `config` (secrets redacted), `deliver`, `failure_to`, `cursor` `{present, bytes}`, `seen_ids`, `baselined`, `last_failure_alert_at`, `lease` `{holder, epoch, expires_at}` or `null`, `recent_deliveries` `[{item, channel, to, at, ok}]` and `recent_errors` `[{at, message, reason}]` (the last 20 since the daemon started, newest first).',
      },
      UNKNOWN,
    ],
    pollers: true,
    mutation: false,
  },
  {
    name: 'runPoller',
    method: 'POST',
    path: '/admin/pollers/:id/run',
    purpose:
      "Manual tick: bypasses the schedule and the lease, never overlaps another tick of the job in the daemon. In cluster mode it takes the job's lease instead, so it never overlaps a tick on any daemon: while another daemon ticks the job (after a wait of up to 2 s) the answer is `skipped` with `error` `busy: <holder> is ticking this job; try again later`. Answers when the tick is over.",
    request: 'empty, or `{}`',
    responses: [
      {
        status: 200,
        body: '`RunResult`: `{"status": "ok"|"transient"|"permanent"|"skipped"|"aborted"|"lease_lost", "items_seen", "items_dispatched", "error"?}`. A failed tick is still 200: the failure is in `status`.',
      },
      UNKNOWN,
      STOPPING,
    ],
    pollers: true,
    mutation: true,
  },
  {
    name: 'pausePoller',
    method: 'POST',
    path: '/admin/pollers/:id/pause',
    purpose: 'Set paused = 1 (persisted); a tick in flight is aborted.',
    request: 'empty, or `{}`',
    responses: [{ status: 200, body: '`JobSummary` after the change.' }, UNKNOWN],
    pollers: true,
    mutation: true,
  },
  {
    name: 'resumePoller',
    method: 'POST',
    path: '/admin/pollers/:id/resume',
    purpose: 'Set paused = 0 and schedule the next tick.',
    request: 'empty, or `{}`',
    responses: [{ status: 200, body: '`JobSummary` after the change.' }, UNKNOWN],
    pollers: true,
    mutation: true,
  },
  {
    name: 'resetPoller',
    method: 'POST',
    path: '/admin/pollers/:id/reset',
    purpose:
      'Destructive: clear cursor, seen items, errors and breaker (paused stays as it is); the next tick records a new baseline.',
    request: '`{"confirm": true}` (required, like `--yes` of the CLI)',
    responses: [
      { status: 200, body: '`JobSummary` after the change.' },
      { status: 400, body: '`ADMIN_CONFIRM_REQUIRED`: `confirm` is not `true`.' },
      UNKNOWN,
    ],
    pollers: true,
    mutation: true,
  },
  {
    name: 'reloadCredentials',
    method: 'POST',
    path: '/admin/credentials/reload',
    purpose:
      'Credential rotation, separate from a config reload: re-read secret files, rebuild channel clients and drop the pollers’ cached provider clients (rebuilt at their next use). Exists also while the poller subsystem is off.',
    request: 'empty, or `{}`',
    responses: [
      {
        status: 200,
        body: '`{"channels": [name], "pollers": bool}`: the channel plugins whose clients were rebuilt, and whether the pollers’ provider clients were dropped (`false` when the subsystem is off).',
      },
    ],
    pollers: false,
    mutation: true,
  },
  {
    name: 'info',
    method: 'GET',
    path: '/admin/info',
    purpose:
      'Who the daemon is and where its files are (absolute paths); a client run from another directory takes the broker socket from here. Exists also while the poller subsystem is off.',
    request: 'none',
    responses: [
      {
        status: 200,
        body: '`{"version", "pid", "started_at", "config_dir", "data_dir", "broker": {"kind", "socket"?}}`: daemon version, process id, start time (RFC 3339), config and data directories, broker kind and local broker socket.',
      },
    ],
    pollers: false,
    mutation: false,
  },
  {
    name: 'agents',
    method: 'GET',
    path: '/admin/agents',
    purpose:
      'Every agent as it runs now: the version it runs on, its model, its bindings with their allowed tools and outbound allowlists; and every agent file that runs no definition.',
    request: 'none',
    responses: [
      {
        status: 200,
        body: '`{"agents": [{"id", "version", "model": {"provider", "name"}, "bindings": [{"plugin", "instance", "allowed_tools": [string], "outbound_allowlist": {channel: [recipient]}}]}], "invalid": [{"id", "reason"}]}`, sorted by id.',
      },
    ],
    pollers: false,
    mutation: false,
  },
  {
    name: 'reloads',
    method: 'GET',
    path: '/admin/reloads',
    purpose:
      'The running configuration version, whether the last load applied with nothing rejected, and the applied versions (the last 50) with what triggered each.',
    request: 'none',
    responses: [
      {
        status: 200,
        body: '`{"version", "last_reload_successful": bool, "history": [{"version", "at", "triggers": [string], "applied", "rejected"}]}`, newest first; a trigger is `start`, `cli`, `watcher`, `admin` or `signal`.',
      },
    ],
    pollers: false,
    mutation: false,
  },
  {
    name: 'cluster',
    method: 'GET',
    path: '/admin/cluster',
    purpose:
      'Cluster mode: every member with its state, last heartbeat, release, applied config version, jobs held and inbound chat partitions held, the leader, the desired config version and the owner of each single-consumer channel instance (the daemon polling a `chat_b` bot), read from PostgreSQL.',
    request: 'none',
    responses: [
      {
        status: 200,
        body: '`{"desired_config_version", "leader": {"daemon_id", "term"} | null, "members": [{"daemon_id", "host", "version", "state": "live"|"stale"|"left", "seen_ago_ms", "applied_config_version", "applied_config_hash", "ticks_in_flight", "jobs_held", "inbound_partitions"}], "channel_owners": [{"plugin", "instance", "daemon_id", "term", "expires_in_ms"}]}`. `channel_owners` holds the unexpired owner leases by plugin and instance (`[]` while no daemon polls any); `jobs_held`, `inbound_partitions` and `channel_owners` are `null` when the daemon cannot tell.',
      },
      { status: 404, body: '`ADMIN_NOT_FOUND`: this daemon runs in single-host mode (no `cluster.yaml`).' },
    ],
    pollers: false,
    mutation: false,
  },
];

const SEGMENT = /^:[A-Za-z_]+$/;

/** The routes whose path matches `path` (any method). */
export function routesForPath(path: string): AdminRoute[] {
  const parts = path.split('/');
  return ADMIN_ROUTES.filter((r) => {
    const pattern = r.path.split('/');
    if (pattern.length !== parts.length) return false;
    return pattern.every((p, i) => (SEGMENT.test(p) ? parts[i] !== '' : p === parts[i]));
  });
}
