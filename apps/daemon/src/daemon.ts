/**
 * The daemon: loads the config directory, starts every subsystem, serves metrics, answers reloads, and
 * shuts down cleanly. This file is the only place that knows every package.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  createAdminApp,
  createMetricsApp,
  parseListen,
  serveAdmin,
  serveApp,
  type ServedApp,
} from '@agent/admin-api';
import { createAgentRuntime, type AgentRuntime } from '@agent/agent-runtime';
import { createConsole } from '@agent/console';
import { createBroker, resolveBrokerConfig, type Broker } from '@agent/broker';
import { builtinChannels } from '@agent/channels';
import {
  createSnapshotStore,
  formatIssue,
  loadConfig,
  secretRedactor,
  type ConfigSnapshot,
  type LoadOptions,
  type SnapshotStore,
} from '@agent/config-snapshot';
import { createLogger, type LogFormat, type Logger, type LogLevel } from '@agent/log';
import { clusterBrokerIssues, clusterOf, clusterSectionReader } from '@agent/cluster/config';
import { pollersSectionReader } from '@agent/poller-runtime/config';
import { mailLegacyJobSource } from '@agent/poller-kind-mail/schema';
import { collectProcessMetrics, Registry } from '@agent/metrics-text';
import { adminOptions } from './admin.js';
import { registerBuildInfo } from './build-info.js';
import { createConfigMetrics } from './config-metrics.js';
import type { ClusterNode } from './cluster.js';
import { accountSchemas } from './plugin-accounts.js';
import { startPollers, type PollerSubsystem } from './pollers.js';
import { createReloadTriggers } from './reload-triggers.js';
import { createReloadPipeline, type ReloadPipeline } from './reload.js';
import { createReloadHistory } from './reload-history.js';
import { fileErrors } from './reload-ack.js';
import type { DaemonErrorCode } from './errors.js';
import { noValidAgentMessage, readAdminToken, unusableSectionMessage } from './start-checks.js';
import type { ApplyReport, Subsystem } from './subsystem.js';
import { DAEMON_VERSION } from './version.js';

export interface DaemonOptions {
  configDir: string;
  cwd?: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** Overrides `runtime.log.format`. */
  logFormat?: LogFormat;
  logLevel?: LogLevel;
  /** Where log lines go (stderr by default). */
  write?: (line: string) => void;
}

export interface Daemon {
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly metricsUrl: string | undefined;
  readonly reloads: ReloadPipeline;
  readonly runtime: AgentRuntime;
  readonly pollers: PollerSubsystem;
  stop(): Promise<void>;
}

export class DaemonStartError extends Error {
  readonly code: DaemonErrorCode = 'DAEMON_CONFIG_INVALID';
}

export function loadOptionsFor(opts: Pick<DaemonOptions, 'cwd' | 'env'>): Omit<LoadOptions, 'previous'> {
  const pluginSchemas: Record<string, { instance?: object; account?: object }> = {};
  for (const ch of builtinChannels) pluginSchemas[ch.name] = { instance: ch.instanceSchema };
  for (const [name, account] of Object.entries(accountSchemas))
    pluginSchemas[name] = { ...pluginSchemas[name], account };
  return {
    cwd: opts.cwd ?? process.cwd(),
    env: opts.env ?? process.env,
    channels: builtinChannels.map((c) => c.name),
    pluginSchemas,
    sections: [pollersSectionReader({ legacy: [mailLegacyJobSource] }), clusterSectionReader()],
  };
}

/** Asks every subsystem for its report (`label` names the step in the log when one fails). */
async function reportsOf(
  subsystems: readonly Subsystem[],
  logger: Logger,
  label: string,
  ask: (s: Subsystem) => Promise<ApplyReport | void> | undefined,
): Promise<Map<string, ApplyReport>> {
  const reports = new Map<string, ApplyReport>();
  for (const s of subsystems) {
    try {
      const r = await ask(s);
      if (r) reports.set(s.name, r);
    } catch (err) {
      logger.error(`subsystem ${label} failed`, { subsystem: s.name, err: (err as Error).message });
    }
  }
  return reports;
}

/** The daemon's logger: `runtime.yaml` format and level unless overridden, every secret of `snapshot` hidden. */
function daemonLogger(opts: DaemonOptions, snapshot: ConfigSnapshot) {
  return createLogger({
    level: opts.logLevel ?? snapshot.runtime.log.level,
    format: opts.logFormat ?? snapshot.runtime.log.format,
    ...(opts.write ? { write: opts.write } : {}),
    redact: secretRedactor(snapshot),
  });
}

export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const startedAt = new Date().toISOString();
  const cwd = opts.cwd ?? process.cwd();
  const loadOptions = loadOptionsFor({ cwd, env: opts.env ?? process.env });
  const bootLog = createLogger({
    format: opts.logFormat ?? 'kv',
    ...(opts.write ? { write: opts.write } : {}),
  });
  const registry = new Registry();
  registerBuildInfo(registry);
  // Node's process metrics (CPU, memory, event-loop lag, handles) as every Prometheus exporter offers them.
  collectProcessMetrics(registry);
  let boot = loadConfig(opts.configDir, loadOptions);
  // Cluster mode: the local directory gives cluster.yaml and the host-local files; the rest is the bundle.
  let node: ClusterNode | null = null;
  const cluster = boot.snapshot ? clusterOf(boot.snapshot) : null;
  // Loaded in cluster mode only: a single-host daemon never loads the PostgreSQL client.
  const clusterMode = cluster ? await import('./cluster.js') : null;
  if (cluster && boot.snapshot) {
    const wrongBroker = clusterBrokerIssues(
      cluster,
      boot.snapshot.broker,
      join(opts.configDir, 'broker.yaml'),
    );
    if (wrongBroker.length > 0) boot = { ...boot, snapshot: null, errors: [...boot.errors, ...wrongBroker] };
    else
      ({ node, boot } = await clusterMode!.bootFromBundle(cluster, {
        configDir: opts.configDir,
        dataDir: resolve(cwd, boot.snapshot.runtime.data_dir),
        loadOptions,
        registry,
        // This host's runtime.yaml and secrets (the bundle carries copies of them): the cluster's lines are
        // in the daemon's format and level, the database URL hidden, from the first one on.
        logger: daemonLogger(opts, boot.snapshot),
      }));
  }
  // A refused start leaves the cluster at once: others need not wait out the heartbeat window.
  const refuse = async (message: string): Promise<never> => {
    await node?.stop();
    throw new DaemonStartError(message);
  };
  if (!boot.snapshot) {
    for (const e of boot.errors) bootLog.error('config issue', { issue: formatIssue(e), code: e.code });
    return refuse(
      `the configuration in ${opts.configDir} cannot start the daemon (${boot.errors.length} error(s) above)`,
    );
  }
  const first = boot.snapshot;
  // Every record, at every level, goes through the secrets of the current snapshot: a value that reaches a
  // field (a URL path holding a token, a server's error text) is hidden however it got there.
  const logger = daemonLogger(opts, first);
  // One record per problem: files here, agents by name, jobs by the poller subsystem (with their reasons).
  for (const e of fileErrors(boot))
    logger.error('config issue', { issue: first.redact(formatIssue(e)), code: e.code });
  for (const w of boot.warnings)
    logger.warn('config issue', { issue: first.redact(formatIssue(w)), code: w.code });
  for (const r of boot.rejected)
    logger.error('agent rejected', { agent_id: r.agentId, reason: first.redact(r.reason) });
  const noAgent = noValidAgentMessage(boot, opts.configDir);
  if (noAgent) return refuse(noAgent);
  const unusable = unusableSectionMessage(boot, opts.configDir);
  if (unusable) return refuse(unusable);

  const dataDir = resolve(cwd, first.runtime.data_dir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const store = createSnapshotStore(first, (err) =>
    logger.error('snapshot listener failed', { err: (err as Error).message }),
  );
  // A snapshot's secrets include every earlier one's, so a value still in flight stays hidden after a reload.
  store.subscribe((next) => logger.setRedactor(secretRedactor(next)));
  const configMetrics = createConfigMetrics(registry);
  configMetrics.setVersions(first);

  const cleanups: (() => Promise<void>)[] = [];
  // Left last: until then this daemon's leases and heartbeat stay its own.
  if (node) cleanups.push(() => node.stop());
  const subsystems: Subsystem[] = [];
  let state: 'starting' | 'running' | 'stopping' = 'starting';
  try {
    let metrics: ServedApp | undefined;
    if (first.runtime.metrics.enabled) {
      const listen = parseListen(first.runtime.metrics.listen);
      const app = createMetricsApp(registry, { ready: () => state === 'running', hosts: [listen.host] });
      metrics = await serveApp(app, listen, {
        setting: 'runtime.yaml metrics.listen',
        logger: logger.child({ component: 'metrics' }),
      });
      cleanups.push(() => metrics!.close());
    }

    const brokerConfig = resolveBrokerConfig(first.broker, { dataDir, cwd });
    const broker: Broker = await createBroker(brokerConfig, {
      logger: logger.child({ component: 'broker' }),
    });
    cleanups.push(() => broker.close());

    // Conversation memory: in cluster mode PostgreSQL, shared by every daemon; else the runtime opens
    // memory.yaml `path` (SQLite) itself.
    const sharedMemory = node && first.memory.enabled ? await clusterMode!.clusterMemory(node) : null;
    if (sharedMemory) cleanups.push(() => sharedMemory.close());
    // In cluster mode one daemon owns each single-consumer channel instance, and inbound messages go
    // through the stream partitioned by chat; the cleanup gives both up after the runtime stopped.
    const chat = node
      ? await clusterMode!.startClusterChat({
          node,
          broker: brokerConfig,
          drainTimeoutMs: first.runtime.sessions.turn_timeout_ms,
          logger,
          registry,
          configVersion: () => store.current().version,
        })
      : null;
    if (chat) cleanups.push(() => chat.stop());
    // Agents: channels, sessions and turns. Turns read the store themselves, so a swap reaches the next turn.
    const runtime: AgentRuntime = createAgentRuntime({
      store,
      channels: builtinChannels,
      logger: logger.child({ component: 'agents' }),
      dataDir,
      ...(sharedMemory ? { memory: sharedMemory } : {}),
      ...(chat ? { hosting: chat.hosting } : {}),
      ...(node ? { daemonId: node.settings.daemonId } : {}),
    });
    chat?.attach(runtime);
    const started = await runtime.start();
    for (const f of started.failed)
      logger.error('channel instance failed to start', {
        plugin: f.plugin,
        instance: f.instance,
        code: f.code,
        err: first.redact(f.message),
      });
    subsystems.push({
      name: 'agents',
      stop: async (graceMs) => {
        // No new message from the stream; the turns running may still end within the grace.
        await chat?.pause();
        const r = await runtime.stop({ graceMs });
        logger.info('agents stopped', { finished: r.finished, aborted: r.aborted, dropped: r.dropped });
      },
    });

    // Pollers: jobs run only when pollers.yaml exists and is enabled; the subsystem follows reloads either way.
    const pollers = await startPollers({
      snapshot: first,
      configDir: opts.configDir,
      cwd,
      logger,
      metrics: registry,
      runtime,
      ...(node ? { cluster: { node, configVersion: () => store.current().version, broker } } : {}),
    });
    subsystems.push(pollers);
    // A clean boot counts as a successful load: the gauge says 1 until a reload rejects something.
    configMetrics.setLastSuccessful(
      boot.errors.length === 0 && (pollers.service?.rejected().length ?? 0) === 0,
    );

    // Cluster mode reads the desired bundle; what it read is recorded once applied (or found unchanged).
    let bundleRead: { version: number; hash: string } | null = null;
    const recordApplied = async (current: ConfigSnapshot) => {
      if (node && bundleRead && current.version === bundleRead.version)
        await node.applied(bundleRead.version, bundleRead.hash);
    };
    // Reload triggers: the broker subscriber and the file watcher, both off when runtime.reload.enabled is false.
    const triggers = createReloadTriggers({
      broker,
      reloads: () => reloads,
      configDir: opts.configDir,
      dataDir,
      logger,
      clustered: node !== null,
    });
    const history = createReloadHistory();
    // Counted like a reload's: agents, poller jobs and files (or parts of files) the start rejected.
    history.record({
      version: first.version,
      triggers: ['start'],
      applied: first.agents.size,
      rejected: boot.rejected.length + fileErrors(boot).length + (pollers.service?.rejected().length ?? 0),
    });
    const reloads = createReloadPipeline({
      configDir: opts.configDir,
      ...(node
        ? {
            source: async () => {
              const desired = await node.desired();
              if (!desired) throw new Error('PostgreSQL holds no config bundle');
              bundleRead = desired;
              return desired;
            },
            ackIdentity: () => node.identity(),
          }
        : {}),
      loadOptions,
      store,
      logger,
      metrics: configMetrics,
      // Every subsystem is asked in turn; one that fails is logged and the others still report.
      apply: async (next, prev, result) => {
        const reports = await reportsOf(subsystems, logger, 'reload', (s) => s.apply?.(next, prev, result));
        await triggers.follow(next);
        await recordApplied(next).catch((err: Error) =>
          logger.warn('cluster: recording the applied version failed', { err: err.message }),
        );
        return reports;
      },
      status: async (current, result) => {
        await recordApplied(current).catch((err: Error) =>
          logger.warn('cluster: recording the applied version failed', { err: err.message }),
        );
        return reportsOf(subsystems, logger, 'status', (s) => s.status?.(current, result));
      },
      preview: (next) => reportsOf(subsystems, logger, 'preview', (s) => s.preview?.(next)),
      history,
      watchFiles: (files) => triggers.watchFiles(files),
    });

    await triggers.follow(first);
    cleanups.push(() => triggers.close());
    if (node) clusterMode!.serveCluster(node, broker, reloads, logger, cleanups);

    // Admin API on loopback: pollers (404 while the subsystem is off) and credential rotation.
    let token: string | null = null;
    if (first.runtime.admin.token_file) {
      const read = readAdminToken(resolve(cwd, first.runtime.admin.token_file));
      if ('error' in read) throw new DaemonStartError(read.error);
      token = read.token;
    }
    // The console's pages ask the admin app itself, so every rule and redaction of the API applies to them.
    let adminApp: ReturnType<typeof createAdminApp> | undefined;
    const pages = createConsole({ api: async (path, init) => adminApp!.request(path, init) });
    adminApp = createAdminApp({
      ...adminOptions({
        configDir: opts.configDir,
        cwd,
        dataDir,
        startedAt,
        loadOptions,
        store,
        logger,
        reloads,
        pollers,
        runtime,
        broker: brokerConfig,
        token,
        history,
        metrics: configMetrics,
        metricsUrl: metrics ? `${metrics.url}/metrics` : undefined,
      }),
      ...(node ? { cluster: () => clusterMode!.clusterView(node) } : {}),
      pages,
    });
    const admin = await serveAdmin(adminApp, first.runtime.admin.listen, {
      logger: logger.child({ component: 'admin' }),
    });
    cleanups.push(() => admin.close());

    state = 'running';
    logger.info('daemon started', {
      version: first.version,
      daemon_version: DAEMON_VERSION,
      agents: [...first.agents.keys()],
      config_dir: opts.configDir,
      broker: first.broker.kind,
      ...(metrics ? { metrics_url: `${metrics.url}/metrics` } : {}),
      admin_url: admin.url,
      reload_enabled: first.runtime.reload.enabled,
      pollers: pollers.service ? 'on' : 'off',
    });

    let stopping: Promise<void> | undefined;
    return {
      store,
      logger,
      registry,
      metricsUrl: metrics ? `${metrics.url}/metrics` : undefined,
      reloads,
      runtime,
      pollers,
      stop() {
        stopping ??= (async () => {
          const grace = store.current().runtime.shutdown_grace_ms;
          state = 'stopping';
          logger.info('daemon stopping', { grace_ms: grace });
          for (const s of subsystems.toReversed()) {
            try {
              await s.stop?.(grace);
            } catch (err) {
              logger.error('subsystem stop failed', { subsystem: s.name, err: (err as Error).message });
            }
          }
          await reloads.idle();
          for (const c of cleanups.toReversed()) await c().catch(() => {});
          logger.info('daemon stopped');
        })();
        return stopping;
      },
    };
  } catch (err) {
    // A start that fails half way stops every part that did start: no channel may keep answering.
    for (const s of subsystems.toReversed()) await s.stop?.(0).catch(() => {});
    for (const c of cleanups.toReversed()) await c().catch(() => {});
    throw err;
  }
}
