/**
 * The poller subsystem as the daemon sees it: off (no `pollers.yaml`, or `enabled: false` at start), or
 * running (`pollers-running.ts`, loaded only then: kinds, state store, runner service, tools, reload).
 */
import type { AgentRuntime } from '@agent/agent-runtime';
import type { Broker } from '@agent/broker';
import type { ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import type { Runner } from '@agent/poller-runtime';
import { pollersOf } from '@agent/poller-runtime/config';
import type { Registry } from 'prom-client';
import type { ClusterNode } from './cluster.js';
import { createJobJournal, type JobJournal } from './job-journal.js';
import type { Subsystem } from './subsystem.js';

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
  if (!settings?.enabled) return offSubsystem();
  const { startRunningPollers } = await import('./pollers-running.js');
  return startRunningPollers(opts, settings);
}

/** The subsystem while it is off: a reload that turns it on is reported as needing a restart. */
function offSubsystem(): PollerSubsystem {
  return {
    name: 'pollers',
    service: null,
    journal: createJobJournal(),
    async apply(next) {
      return pollersOf(next)?.settings.enabled
        ? { restartRequired: [{ field: 'pollers.yaml enabled' }] }
        : {};
    },
    async status(current) {
      return pollersOf(current)?.settings.enabled
        ? { restartRequired: [{ field: 'pollers.yaml enabled' }] }
        : {};
    },
    async preview(next) {
      return pollersOf(next)?.settings.enabled
        ? { restartRequired: [{ field: 'pollers.yaml enabled' }] }
        : {};
    },
  };
}
