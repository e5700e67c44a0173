/**
 * The poller subsystem as the daemon sees it: off (no `pollers.yaml`, or `enabled: false` at start), or
 * running (`pollers-running.ts`, loaded only then: kinds, state store, runner service, tools, reload).
 */
import { join } from 'node:path';
import type { AgentRuntime } from '@agent/agent-runtime';
import type { Broker } from '@agent/broker';
import type { ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import type { Runner } from '@agent/poller-runtime';
import { pollersOf } from '@agent/poller-runtime/config';
import type { Registry } from 'prom-client';
import type { ClusterNode } from './cluster.js';
import { createJobJournal, type JobJournal } from './job-journal.js';
import type { RestartReport, Subsystem } from './subsystem.js';

export interface PollerSubsystem extends Subsystem {
  /** `null` while the subsystem is off (`pollers.yaml` absent or `enabled: false` at start). */
  readonly service: Runner | null;
  /** Each job's last deliveries and errors (empty while the subsystem is off). */
  readonly journal: JobJournal;
}

export interface PollerSubsystemOptions {
  snapshot: ConfigSnapshot;
  configDir: string;
  cwd: string;
  logger: Logger;
  metrics: Registry;
  runtime: AgentRuntime;
  /**
   * Cluster mode: jobs live in PostgreSQL and a claim loop shares them with the other daemons; the broker
   * carries the due hints between them.
   */
  cluster?: { node: ClusterNode; configVersion(): number; broker: Broker };
}

/**
 * Starts the subsystem when `pollers.yaml` is present and enabled. Either way the returned subsystem follows
 * reloads: it applies job changes, loads newly listed kind packages, and reports what needs a restart.
 */
export async function startPollers(opts: PollerSubsystemOptions): Promise<PollerSubsystem> {
  const settings = pollersOf(opts.snapshot)?.settings;
  if (!settings?.enabled) return offSubsystem(opts.configDir);
  const { startRunningPollers } = await import('./pollers-running.js');
  return startRunningPollers(opts, settings);
}

/** The subsystem while it is off: a reload that turns it on is reported as needing a restart. */
function offSubsystem(configDir: string): PollerSubsystem {
  const turnedOn = (next: ConfigSnapshot) =>
    pollersOf(next)?.settings.enabled ? { restartRequired: [pollersRestart(configDir, 'enabled')] } : {};
  return {
    name: 'pollers',
    service: null,
    journal: createJobJournal(),
    apply: async (next) => turnedOn(next),
    status: async (current) => turnedOn(current),
    preview: async (next) => turnedOn(next),
  };
}

const POLLERS_RESTART_REASONS = {
  removed: 'the poller subsystem runs until the daemon restarts',
  enabled: 'the poller subsystem is switched on or off at start: it stays as it is until the daemon restarts',
  state_db: 'the state database is opened at start: the running one stays until the daemon restarts',
  kind_packages: 'Node cannot unload a loaded package: it stays until the daemon restarts',
} as const;

/** A restart-required change of `pollers.yaml`: `pollers.yaml <field>` (or `removed`), why, and the file. */
export function pollersRestart(
  configDir: string,
  what: keyof typeof POLLERS_RESTART_REASONS,
  detail = '',
): RestartReport {
  return {
    field: `pollers.yaml ${what}${detail}`,
    reason: POLLERS_RESTART_REASONS[what],
    file: join(configDir, 'pollers.yaml'),
  };
}
