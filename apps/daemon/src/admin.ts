/** The admin server's options: the poller service, reloads (and their previews), credentials, who we are. */
import { resolve } from 'node:path';
import {
  AdminError,
  type AdminAgentList,
  type AdminAppOptions,
  type AdminPollers,
  type ReloadPlanJson,
} from '@agent/admin-api';
import type { AgentRuntime } from '@agent/agent-runtime';
import type { BrokerConfig } from '@agent/broker';
import {
  loadConfig,
  secretRedactor,
  type ConfigSnapshot,
  type LoadOptions,
  type SnapshotStore,
} from '@agent/config-snapshot';
import type { RootLogger } from '@agent/log';
import type { ConfigMetrics } from './config-metrics.js';
import type { PollerSubsystem } from './pollers.js';
import type { ReloadOutcome, ReloadPipeline } from './reload.js';
import type { ReloadHistory } from './reload-history.js';
import { DAEMON_VERSION } from './version.js';

export interface AdminDeps {
  configDir: string;
  cwd: string;
  dataDir: string;
  startedAt: string;
  loadOptions: Omit<LoadOptions, 'previous'>;
  store: SnapshotStore;
  logger: RootLogger;
  reloads: ReloadPipeline;
  pollers: PollerSubsystem;
  runtime: AgentRuntime;
  broker: Pick<BrokerConfig, 'kind' | 'socketPath'>;
  token: string | null;
  history: ReloadHistory;
  metrics: ConfigMetrics;
  metricsUrl: string | undefined;
}

export function adminOptions(d: AdminDeps): AdminAppOptions {
  const { store, logger, pollers } = d;
  return {
    pollers: pollers.service ? withJournal(pollers.service, pollers) : null,
    token: d.token,
    redact: (t) => store.current().redact(t),
    logger,
    // Absolute paths, so that a client run from another directory finds this daemon's broker socket.
    info: () => ({
      version: DAEMON_VERSION,
      pid: process.pid,
      started_at: d.startedAt,
      config_dir: resolve(d.cwd, d.configDir),
      data_dir: d.dataDir,
      broker: d.broker.socketPath
        ? { kind: d.broker.kind, socket: d.broker.socketPath }
        : { kind: d.broker.kind },
      ...(d.metricsUrl ? { metrics_url: d.metricsUrl } : {}),
    }),
    agents: () => agentsOf(store.current()),
    reloads: () => ({
      version: store.current().version,
      last_reload_successful: d.metrics.lastSuccessful(),
      history: [...d.history.list()],
    }),
    reloadPollers: async ({ dryRun }) =>
      planAnswer(
        dryRun ? await d.reloads.preview({ source: 'admin' }) : await d.reloads.reload({ source: 'admin' }),
        dryRun,
      ),
    reloadCredentials: async () => {
      // Fresh secrets, without a new configuration version: channel instances and provider clients.
      const fresh =
        loadConfig(d.configDir, { ...d.loadOptions, previous: store.current() }).snapshot ?? store.current();
      // The fresh secrets are in use from now on, before any swap: hide them too (fresh keeps the old ones).
      logger.setRedactor(secretRedactor(fresh));
      const channels = d.runtime.reloadCredentials(fresh);
      if (pollers.service) await pollers.service.reloadCredentials(fresh);
      logger.info('credentials reloaded', { channels, pollers: pollers.service !== null });
      return { channels, pollers: pollers.service !== null };
    },
  };
}

/** The poller service, with each job's last deliveries and errors in its detail. */
function withJournal(service: AdminPollers, { journal }: PollerSubsystem): AdminPollers {
  return {
    list: () => service.list(),
    show: async (id) => ({
      ...(await service.show(id)),
      recent_deliveries: journal.deliveries(id),
      recent_errors: journal.errors(id),
    }),
    run: (id) => service.run(id),
    pause: (id) => service.pause(id),
    resume: (id) => service.resume(id),
    reset: (id) => service.reset(id),
    ...(service.rejectedJobs ? { rejectedJobs: () => service.rejectedJobs!() } : {}),
  };
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Every agent as it runs, with its bindings; and the agent files that run no definition. */
function agentsOf(snap: ConfigSnapshot): AdminAgentList {
  return {
    agents: [...snap.agents.values()]
      .map((a) => ({
        id: a.id,
        version: a.version,
        model: { provider: a.definition.model.provider, name: a.definition.model.name },
        bindings: a.definition.inbound_bindings.map((b) => ({
          plugin: b.plugin,
          instance: b.instance ?? '*',
          allowed_tools: [...(b.allowed_tools ?? [])],
          outbound_allowlist: Object.fromEntries(
            Object.entries(b.outbound_allowlist ?? {}).map(([ch, to]) => [ch, [...to]]),
          ),
        })),
      }))
      .sort(byId),
    invalid: [...snap.invalidAgents].map(([id, reason]) => ({ id, reason })).sort(byId),
  };
}

/** The poller plan of a reload (or of its preview), with the files it could not apply and the agents. */
function planAnswer(outcome: ReloadOutcome, dryRun: boolean): ReloadPlanJson {
  const { ack } = outcome;
  const report = outcome.reports.get('pollers');
  if (!report?.plan) {
    const why =
      [
        ...ack.errors.map((e) => e.reason),
        ...ack.rejected.map((r) => `${r.agent_id}: ${r.reason}`),
        ...ack.restart_required.map((r) => `restart required: ${r.field}`),
      ].join('; ') || 'the configuration could not be applied';
    throw new AdminError(
      'ADMIN_BAD_REQUEST',
      `${dryRun ? 'reload preview: nothing would apply' : 'reload rejected'}: ${why}`,
    );
  }
  return {
    ...report.plan,
    errors: ack.errors.map((e) => e.reason),
    dry_run: dryRun,
    version: ack.version,
    agents: { applied: ack.applied, rejected: ack.rejected, restart_required: ack.restart_required },
  };
}
