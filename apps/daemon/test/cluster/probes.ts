// What the run checks from outside while a fault is in place: `agent reload` during a NATS partition (and
// the cut-off daemon's convergence on the version pushed meanwhile), and the clock skew a skewed daemon
// measures against the database.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '@agent/timers';
import type { ClusterDaemon } from './cluster-daemon.js';
import { runAgent } from './daemon-proc.js';
import type { DbObserver } from './db-observer.js';
import type { ReloadProbe, SkewProbe } from './history.js';

/** `agent config push` from the operator's directory; the version it reports. */
export async function pushConfig(operatorRoot: string): Promise<number> {
  const r = await runAgent(operatorRoot, ['config', 'push', '--config-dir', 'config']);
  const version = /^config v(\d+) (pushed|unchanged)/m.exec(r.stdout)?.[1];
  if (r.code !== 0 || version === undefined)
    throw new Error(`agent config push exited ${r.code}:\n${r.stdout}${r.stderr}`);
  return Number(version);
}

export interface ProbeContext {
  operatorRoot: string;
  observer: DbObserver;
  /** Rewrites the operator's agent file so that the next push is a new version. */
  agentYaml(revision: number): string;
  log(line: string): void;
}

/**
 * Inside a NATS partition of `d`: pushes a new bundle version, runs `agent reload` (the real CLI), and
 * watches in the background for the heal and for `d` to report the new version. Resolves to the probe once
 * the reload has answered; `done` resolves once convergence is known (or 30 s after the heal passed).
 */
export async function reloadInPartition(
  ctx: ProbeContext,
  d: ClusterDaemon,
  revision: number,
): Promise<{ probe: ReloadProbe; done: Promise<void> }> {
  writeFileSync(join(ctx.operatorRoot, 'config', 'agents.d', 'a.yaml'), ctx.agentYaml(revision));
  const pushedVersion = await pushConfig(ctx.operatorRoot);
  const at = Date.now();
  const r = await runAgent(ctx.operatorRoot, ['reload', '--config-dir', 'config']);
  const probe: ReloadProbe = {
    daemonId: d.id,
    at,
    exitCode: r.code,
    output: r.stdout + r.stderr,
    pushedVersion,
  };
  ctx.log(`probe: agent reload with ${d.id} cut off from NATS exited ${r.code} (config v${pushedVersion})`);
  const done = (async () => {
    for (;;) {
      if (probe.healedAt === undefined && d.natsProxy.mode.kind === 'pass') probe.healedAt = Date.now();
      const applied = await ctx.observer.appliedVersion(d.id).catch(() => null);
      if (probe.convergedAt === undefined && applied !== null && applied >= pushedVersion)
        probe.convergedAt = Date.now();
      if (probe.healedAt !== undefined && probe.convergedAt !== undefined) return;
      if (probe.healedAt !== undefined && Date.now() - probe.healedAt > 30_000) return;
      await sleep(100);
    }
  })();
  return { probe, done };
}

/** A gauge's value in a Prometheus text page (the first series of that name). */
function gaugeValue(page: string, name: string): number | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  const v = line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
  return Number.isFinite(v) ? v : undefined;
}

/** Reads `poller_clock_skew_seconds` of a daemon restarted under `skewSecs` once it has claimed (≤ 10 s). */
export async function measuredSkew(d: ClusterDaemon, skewSecs: number): Promise<SkewProbe> {
  const probe: SkewProbe = { daemonId: d.id, skewSecs };
  for (let i = 0; i < 50; i++) {
    const page = await fetch(d.metricsUrl)
      .then((r) => r.text())
      .catch(() => '');
    const v = gaugeValue(page, 'poller_clock_skew_seconds');
    if (v !== undefined && v !== 0) {
      probe.measuredSecs = Math.round(v * 1000) / 1000;
      break;
    }
    await sleep(200);
  }
  return probe;
}
