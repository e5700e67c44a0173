/**
 * `agent --check-config`: the daemon's own checks without starting anything: the loader, then the job
 * validation the poller subsystem runs (built-in kinds plus `kind_packages`), then the start-time checks.
 */
import { join, resolve } from 'node:path';
import { clusterBrokerIssues, clusterOf } from '@agent/cluster/config';
import { formatIssue, loadConfig, type ConfigSnapshot } from '@agent/config-snapshot';
import {
  renderCheckConfig,
  type CheckConfigOutput,
  type CheckedPollers,
  type LegacyFileReport,
} from '@agent/cli/check-config';
import {
  agentDirectory,
  legacyJobsYaml,
  pollersOf,
  validatePollers,
  type LegacyReport,
} from '@agent/poller-runtime';
import { loadOptionsFor } from './daemon.js';
import { buildKindRegistry } from './kinds.js';
import { noValidAgentMessage, readAdminToken, unusableSectionMessage } from './start-checks.js';

export async function checkConfig(
  configDir: string,
  opts: { cwd?: string; env?: Readonly<Record<string, string | undefined>> } = {},
): Promise<CheckConfigOutput> {
  const cwd = opts.cwd ?? process.cwd();
  const result = loadConfig(configDir, loadOptionsFor({ cwd, env: opts.env ?? process.env }));
  const snapshot = result.snapshot;
  let checked: CheckedPollers | null = null;
  const startErrors: string[] = [];
  if (snapshot) {
    checked = await checkPollers(snapshot, resolve(cwd, configDir), startErrors);
    const noAgent = noValidAgentMessage(result, configDir);
    if (noAgent) startErrors.push(noAgent);
    const unusable = unusableSectionMessage(result, configDir);
    if (unusable) startErrors.push(unusable);
    const cluster = clusterOf(snapshot);
    for (const issue of clusterBrokerIssues(cluster, snapshot.broker, join(configDir, 'broker.yaml')))
      startErrors.push(formatIssue(issue));
    const tokenFile = snapshot.runtime.admin.token_file;
    if (tokenFile) {
      const read = readAdminToken(resolve(cwd, tokenFile));
      if ('error' in read) startErrors.push(read.error);
    }
  }
  return renderCheckConfig(result, checked, startErrors);
}

/** The poller part of the check: the same validation the daemon runs at start (`null`: no pollers.yaml). */
async function checkPollers(
  snapshot: ConfigSnapshot,
  kindsDir: string,
  startErrors: string[],
): Promise<CheckedPollers | null> {
  const pollers = pollersOf(snapshot);
  if (!pollers) return null;
  const base = {
    enabled: pollers.settings.enabled,
    total: pollers.jobs.length + pollers.rejected.length,
    legacy: pollers.legacy.map(legacyFileReport),
  };
  if (!pollers.settings.enabled) return { ...base, jobs: null };
  const registry = await buildKindRegistry(snapshot, pollers.settings.kind_packages, kindsDir, null);
  for (const f of registry.failedPackages()) startErrors.push(`${f.message} [${f.code}]`);
  const v = validatePollers(pollers, agentDirectory(snapshot), registry);
  const rejected = v.rejected.map((r) => ({
    id: r.id ?? `jobs[${r.index}]`,
    errors: r.issues.map((i) => snapshot.redact(formatIssue(i))),
  }));
  return { ...base, jobs: { valid: v.valid.length, rejected } };
}

function legacyFileReport(r: LegacyReport): LegacyFileReport {
  return {
    title: r.title,
    file: r.file,
    jobs: r.jobs.map((j) => ({
      id: j.id,
      source: j.source,
      agent: j.agent,
      agentRule: j.agentRule,
      overridden: j.overridden,
    })),
    rejected: r.rejected.map((x) => ({ id: x.id, message: x.issues[0]?.message ?? 'invalid' })),
    yaml: legacyJobsYaml(r),
  };
}
