/** The poller subsystem as the daemon runs it: kinds, state store, runner service, tools, reload. */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { AgentRuntime } from '@agent/agent-runtime';
import { warnLegacyMailJobs, type ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import {
  createKindRegistry,
  createPollerService,
  loadKindPackages,
  type PollerService,
  type ReloadPlan,
} from '@agent/poller-core/runtime';
import { createSqliteStateStore } from '@agent/poller-core/sqlite';
import type { Registry } from 'prom-client';
import { builtinKinds } from './kinds.js';
import type { Subsystem } from './daemon.js';

export interface PollerSubsystem extends Subsystem {
  readonly service: PollerService;
  /** The plan of the last reload that reached the poller subsystem. */
  lastPlan(): ReloadPlan | null;
}

/** `null` when `pollers.yaml` is absent or `enabled: false`: no jobs, no admin endpoints. */
export async function startPollers(opts: {
  snapshot: ConfigSnapshot;
  configDir: string;
  cwd: string;
  logger: Logger;
  metrics: Registry;
  runtime: AgentRuntime;
}): Promise<PollerSubsystem | null> {
  const { snapshot, logger } = opts;
  const pollers = snapshot.pollers;
  if (!pollers || !pollers.settings.enabled) return null;

  const registry = createKindRegistry();
  for (const k of builtinKinds) registry.register(k);
  const loaded = await loadKindPackages(registry, pollers.settings.kind_packages, {
    fromDir: resolve(opts.cwd, opts.configDir),
  });
  for (const f of loaded.failed)
    logger.error('poller kind package failed to load', { package: f.package, code: f.code, err: f.message });

  const store = createSqliteStateStore(resolve(opts.cwd, pollers.settings.state_db));
  const service = createPollerService({
    snapshot,
    registry,
    store,
    metrics: opts.metrics,
    logger: logger.child({ component: 'pollers' }),
    holderId: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    // For crash tests only: lets a restarted daemon take over a killed one's leases without waiting 30 s.
    ...(testMinLeaseTtlMs() !== undefined ? { minLeaseTtlMs: testMinLeaseTtlMs() } : {}),
    dispatcher: {
      deliver: async (m) => {
        await opts.runtime.deliver({ agentId: m.agentId, channel: m.channel, to: m.to, text: m.text });
      },
    },
  });
  await service.start();
  warnLegacyMailJobs(snapshot, logger);
  let lastPlan: ReloadPlan | null = null;
  const removeTools = opts.runtime.registerTools(() => service.tools());

  return {
    name: 'pollers',
    service,
    lastPlan: () => lastPlan,
    async apply(next) {
      if (!next.pollers?.settings.enabled) {
        logger.warn('restart-required field changed during reload', {
          field: next.pollers ? 'pollers.yaml enabled' : 'pollers.yaml removed',
        });
        return;
      }
      // Job definitions reference agents and secrets too, so every applied snapshot is planned (the service
      // logs the plan and every rejected job); an unchanged configuration plans only `keep`.
      lastPlan = await service.reload(next);
      warnLegacyMailJobs(next, logger);
    },
    async stop() {
      removeTools();
      await service.stop();
      await store.close();
    },
  };
}

function testMinLeaseTtlMs(): number | undefined {
  const v = Number(process.env.AGENT_TEST_MIN_LEASE_TTL_MS);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}
