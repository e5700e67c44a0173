/** `agent reload`: publish `control.reload`, wait up to 5 s for the matching `control.reload.ack`. */
import { randomUUID } from 'node:crypto';
import type { RestartRequiredJson } from '@agent/admin-api';
import type { Broker } from '@agent/broker';
import { formatIssue, loadClientConfig } from '@agent/config-snapshot/client';
import { tryClusterReload } from './cluster-reload-command.js';
import { daemonBrokerConfig } from './daemon-info.js';
import { formatRestartRequired } from './format.js';
import { paint, type CliIO } from './io.js';
import { RELOAD_ACK_SUBJECT, RELOAD_SUBJECT } from './subjects.js';

export const RELOAD_ACK_TIMEOUT_MS = 5000;

/** The ack the daemon publishes (decisions §2, plus every rejection the reload made). */
export interface ReloadAck {
  request_id: string;
  version: number;
  applied: string[];
  rejected: { agent_id: string; reason: string }[];
  /** Poller jobs the reload rejected; `running` when a previous definition keeps running. */
  rejected_jobs: { job_id: string; reason: string; running: boolean }[];
  /** Files (or parts of files) that could not be applied, with located reasons: the root causes. */
  errors: { file: string; reason: string }[];
  /** Changes not applied until the daemon restarts. */
  restart_required: RestartRequiredJson[];
  elapsed_ms: number;
  /** A preview (`agent reload --dry-run`): nothing was applied; `version` is the one the reload would run on. */
  dry_run?: boolean;
  /** The poller jobs' plan, when the poller subsystem planned (its rejections are `rejected_jobs`). */
  pollers?: { add: string[]; replace: string[]; remove: string[]; keep: string[] };
}

export const NO_ACK_MESSAGE = `no control.reload.ack received within ${RELOAD_ACK_TIMEOUT_MS / 1000} s: the daemon is not running, or runtime.reload.enabled is false`;
/** Failed at once, not after a wait: nothing to connect to, or nothing subscribed. */
export const NOT_REACHABLE_MESSAGE = 'no control.reload.ack: the daemon is not running or cannot be reached';
export const NO_RESPONDER_MESSAGE =
  'no control.reload.ack: nothing answers control.reload; the daemon is not running, or runtime.reload.enabled is false';

/** Everything the reload rejected: agents, jobs and files (the spec line's `rejected=` count). */
export function rejectedCount(ack: ReloadAck): number {
  return ack.rejected.length + (ack.rejected_jobs ?? []).length + (ack.errors ?? []).length;
}

/**
 * The spec's first line, then one line per applied (✓) agent, one per rejected (✗) agent, job and file,
 * then restart-required fields (!).
 */
export function formatReloadAck(ack: ReloadAck, color = false): string[] {
  const lines = [
    `${ack.dry_run ? 'reload preview (nothing applied): would run ' : 'reload '}v${ack.version}: applied=${ack.applied.length} rejected=${rejectedCount(ack)} elapsed=${Math.round(ack.elapsed_ms)}ms`,
  ];
  const bad = paint.red('✗', color);
  for (const id of ack.applied) lines.push(`  ${paint.green('✓', color)} ${id}`);
  if (ack.dry_run && ack.pollers) lines.push(...previewJobLines(ack.pollers, color));
  for (const r of ack.rejected) lines.push(`  ${bad} ${r.agent_id}: ${r.reason}`);
  for (const j of ack.rejected_jobs ?? [])
    lines.push(
      `  ${bad} job ${j.job_id}: ${j.reason}${j.running ? ' (its previous definition keeps running)' : ''}`,
    );
  for (const e of ack.errors ?? []) lines.push(`  ${bad} ${e.reason}`);
  for (const r of ack.restart_required)
    lines.push(`  ${paint.yellow('!', color)} restart required: ${formatRestartRequired(r)}`);
  return lines;
}

/** A preview also shows the jobs it would add (+), replace (~) and remove (-). */
function previewJobLines(p: NonNullable<ReloadAck['pollers']>, color: boolean): string[] {
  return [
    ...p.add.map((id) => `  ${paint.green('+', color)} job ${id}`),
    ...p.replace.map((id) => `  ${paint.yellow('~', color)} job ${id}`),
    ...p.remove.map((id) => `  ${paint.red('-', color)} job ${id}`),
  ];
}

/** 0 when nothing was rejected; 2 ("needs attention") when any agent, job or file was rejected. */
export function reloadExitCode(ack: ReloadAck): number {
  return rejectedCount(ack) > 0 ? 2 : 0;
}

export async function runReload(
  io: CliIO,
  args: { configDir: string; json: boolean; dryRun?: boolean; timeoutMs?: number },
): Promise<number> {
  const { config, errors } = loadClientConfig(args.configDir, { cwd: io.cwd, env: io.env });
  if (!config) {
    for (const e of errors) io.err(formatIssue(e));
    return 1;
  }
  // Loaded here, not at start-up: other commands never pay for the broker client.
  const { connectBroker, isBrokerError, requestWithAck, resolveBrokerConfig } = await import('@agent/broker');
  let broker: Broker | undefined;
  try {
    broker = await connectBroker(
      await daemonBrokerConfig(
        resolveBrokerConfig(config.broker, { dataDir: config.dataDir, cwd: io.cwd }),
        io,
        args.configDir,
      ),
      { connectTimeoutMs: 2000 },
    );
    const timeoutMs = args.timeoutMs ?? RELOAD_ACK_TIMEOUT_MS;
    const subjects = { subject: RELOAD_SUBJECT, ackSubject: RELOAD_ACK_SUBJECT };
    // A preview changes nothing, and every daemon of a cluster runs the same bundle: one answer is enough.
    const clustered = args.dryRun
      ? undefined
      : await tryClusterReload(io, broker, { json: args.json, timeoutMs, ...subjects });
    if (clustered !== undefined) return clustered;
    const ack = (await requestWithAck(broker, {
      subject: RELOAD_SUBJECT,
      ackSubject: RELOAD_ACK_SUBJECT,
      data: { request_id: randomUUID(), requested_by: 'cli', ...(args.dryRun ? { dry_run: true } : {}) },
      timeoutMs: args.timeoutMs ?? RELOAD_ACK_TIMEOUT_MS,
    })) as ReloadAck;
    if (args.json) io.out(JSON.stringify(ack, null, 2));
    else for (const l of formatReloadAck(ack, io.color)) io.out(l);
    return reloadExitCode(ack);
  } catch (err) {
    if (isBrokerError(err)) {
      const why =
        err.code === 'BROKER_UNREACHABLE'
          ? `${NOT_REACHABLE_MESSAGE} (${err.message})`
          : err.code === 'BROKER_NO_RESPONDERS'
            ? `${NO_RESPONDER_MESSAGE} (${err.message})`
            : err.code === 'BROKER_TIMEOUT'
              ? NO_ACK_MESSAGE
              : `reload failed: ${err.message}`;
      io.err(`agent reload: ${why}`);
      return 1;
    }
    io.err(`agent reload: ${(err as Error).message}`);
    return 1;
  } finally {
    await broker?.close().catch(() => {});
  }
}
