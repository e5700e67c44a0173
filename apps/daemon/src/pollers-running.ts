/**
 * The poller subsystem while it runs: kinds, state store, runner service, tools, reload. Loaded only when
 * `pollers.yaml` enables it, so that a daemon without pollers never loads the runner or the kinds.
 */
import { resolve } from 'node:path';
import type { ConfigSnapshot } from '@agent/config-snapshot';
import { createRunner, warnLegacyJobs, type ReloadPlan, type Runner } from '@agent/poller-runtime';
import { pollersOf, type PollersSettings } from '@agent/poller-runtime/config';
import { createSqliteStateStore } from '@agent/poller-runtime/sqlite';
import { holderId, holderIsGone } from './holder.js';
import { createJobJournal } from './job-journal.js';
import {
  buildKindRegistry,
  ensureBuiltinKinds,
  loadListedKindPackages,
  needsBuiltinKinds,
  withBuiltinKinds,
} from './kinds.js';
import { pollersRestart, type PollerSubsystem, type PollerSubsystemOptions } from './pollers.js';
import type { ApplyReport, RestartReport } from './subsystem.js';

/**
 * Starts the subsystem on `settings` (enabled). It follows reloads: it applies job changes, loads newly
 * listed kind packages, and reports what needs a restart.
 */
export async function startRunningPollers(
  opts: PollerSubsystemOptions,
  settings: PollersSettings,
): Promise<PollerSubsystem> {
  const { logger } = opts;
  const kindsDir = resolve(opts.cwd, opts.configDir);
  const registry = await buildKindRegistry(opts.snapshot, settings.kind_packages, kindsDir, logger);
  const statePath = resolve(opts.cwd, settings.state_db);
  const shared = opts.cluster
    ? await (
        await import('./cluster.js')
      ).clusterPollerStore(opts.cluster.node, opts.cluster.broker, logger.child({ component: 'pollers' }))
    : null;
  const store = shared?.store ?? createSqliteStateStore(statePath);
  const journal = createJobJournal();
  let service: Runner;
  try {
    service = createRunner({
      snapshot: opts.snapshot,
      registry,
      store,
      metrics: opts.metrics,
      logger: journal.tap(logger.child({ component: 'pollers' })),
      ...(shared && opts.cluster
        ? {
            holderId: opts.cluster.node.membership.holderId,
            cluster: shared.runnerOptions(opts.cluster.configVersion),
          }
        : { holderId: holderId(), holderGone: (holder: string) => holderIsGone(holder) }),
      // For crash tests only: lets a restarted daemon take over a killed one's leases without waiting 30 s.
      ...(testMinLeaseTtlMs() !== undefined ? { minLeaseTtlMs: testMinLeaseTtlMs() } : {}),
      dispatcher: {
        deliver: async (m) => {
          const seen = { item: m.itemId, channel: m.channel, to: m.to };
          try {
            await opts.runtime.deliver({ agentId: m.agentId, channel: m.channel, to: m.to, text: m.text });
          } catch (err) {
            journal.delivered(m.jobId, { ...seen, ok: false });
            throw err;
          }
          journal.delivered(m.jobId, { ...seen, ok: true });
        },
      },
    });
    await service.start();
  } catch (err) {
    await store.close();
    throw err;
  }
  const leaveCluster = shared?.follow(service) ?? (() => {});
  warnLegacyJobs(pollersOf(opts.snapshot)?.legacy ?? [], logger);
  const removeTools = opts.runtime.registerTools(() => service.tools());

  return {
    name: 'pollers',
    service,
    journal,
    async apply(next): Promise<ApplyReport> {
      const restartRequired = runningSettingsChanged(registry.packages(), statePath, next, opts);
      const nextSettings = pollersOf(next)?.settings;
      if (!nextSettings?.enabled) return { restartRequired };
      if (needsBuiltinKinds(next)) await ensureBuiltinKinds(registry);
      await loadListedKindPackages(registry, nextSettings.kind_packages, kindsDir, logger);
      // Job definitions reference agents and secrets too, so every applied snapshot is planned; an unchanged
      // configuration plans only `keep`.
      const plan = await service.reload(next);
      warnLegacyJobs(pollersOf(next)?.legacy ?? [], logger);
      return reportOf(plan, restartRequired);
    },
    async status(current): Promise<ApplyReport> {
      const restartRequired = runningSettingsChanged(registry.packages(), statePath, current, opts);
      const currentSettings = pollersOf(current)?.settings;
      if (!currentSettings?.enabled) return { restartRequired };
      // The files are as they were, but a listed kind package that failed to load may be installed by now:
      // it is tried again, and the running snapshot is planned once more when one loaded (its jobs start).
      const loaded = registry.packages().length;
      await loadListedKindPackages(registry, currentSettings.kind_packages, kindsDir, logger);
      if (registry.packages().length > loaded)
        return reportOf(await service.reload(current), restartRequired);
      // Otherwise every running job stays, and the rejections of the last start or reload stand.
      const rejected = service.rejectedJobs().toSorted((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const keep = (await service.list()).map((j) => j.id).sort();
      return {
        plan: {
          add: [],
          replace: [],
          remove: [],
          keep,
          rejected: rejected.map((r) => ({ id: r.id, errors: r.errors })),
        },
        restartRequired,
        rejectedJobs: rejected.map((r) => ({ jobId: r.id, reasons: r.errors, running: r.running })),
      };
    },
    async preview(next): Promise<ApplyReport> {
      const restartRequired = runningSettingsChanged(registry.packages(), statePath, next, opts);
      if (!pollersOf(next)?.settings.enabled) return { restartRequired };
      // The built-in kinds the reload would register are the daemon's own code: a preview validates with
      // them, in a copy of the registry. A package newly listed in kind_packages is loaded by the reload
      // only: loading its code is an effect.
      const kinds = needsBuiltinKinds(next) ? await withBuiltinKinds(registry) : undefined;
      return reportOf(service.previewReload(next, kinds), restartRequired);
    },
    async stop() {
      removeTools();
      leaveCluster();
      await service.stop();
      await store.close();
    },
  };
}

function reportOf(plan: ReloadPlan, restartRequired: RestartReport[]): ApplyReport {
  const keep = new Set(plan.keep);
  return {
    plan,
    restartRequired,
    rejectedJobs: plan.rejected.map((r) => ({ jobId: r.id, reasons: r.errors, running: keep.has(r.id) })),
  };
}

/** `pollers.yaml` fields the running subsystem cannot change: the switch, the state file, loaded packages. */
function runningSettingsChanged(
  loadedPackages: readonly string[],
  statePath: string,
  next: ConfigSnapshot,
  { cwd, configDir }: Pick<PollerSubsystemOptions, 'cwd' | 'configDir'>,
): RestartReport[] {
  const s = pollersOf(next)?.settings;
  if (!s) return [pollersRestart(configDir, 'removed')];
  const out: RestartReport[] = [];
  if (!s.enabled) out.push(pollersRestart(configDir, 'enabled'));
  if (resolve(cwd, s.state_db) !== statePath) out.push(pollersRestart(configDir, 'state_db'));
  // A loaded package stays loaded (Node cannot unload a module): removing one needs a restart.
  const gone = loadedPackages.filter((p) => !s.kind_packages.includes(p));
  if (gone.length) out.push(pollersRestart(configDir, 'kind_packages', ` (removed: ${gone.join(', ')})`));
  return out;
}

function testMinLeaseTtlMs(): number | undefined {
  const v = Number(process.env.AGENT_TEST_MIN_LEASE_TTL_MS);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}
