/**
 * `agent reload` in cluster mode: one report from the acks of every live daemon. Pure: the command gathers,
 * this decides what to print and the exit code.
 */
import { paint } from './io.js';
import { formatReloadAck, rejectedCount, type ReloadAck } from './reload.js';

/** The answer on `control.cluster.members`. */
export interface ClusterMembersAnswer {
  members: { daemon_id: string; host: string; seen_ago_ms: number | null }[];
}

/** A cluster daemon's ack: today's ack plus who answered and which config it runs. */
export interface ClusterReloadAck extends ReloadAck {
  daemon_id: string;
  host: string;
  /** Bundle version: the same number on every daemon that runs the same config. */
  config_version: number;
  config_hash: string;
}

export interface ClusterReloadInput {
  /** Live members when the reload was sent. */
  expected: readonly { daemonId: string; lastHeartbeatAgoMs?: number | null }[];
  acks: readonly ClusterReloadAck[];
  timeoutMs: number;
}

export interface ClusterReloadReport {
  lines: string[];
  /** 0 all applied and agree; 1 no ack at all; 2 something rejected; 3 a member missing or disagreeing. */
  exitCode: number;
}

/** What makes two daemons agree: same bundle, same hash, same agents applied. */
function agreementKey(a: ClusterReloadAck): string {
  return JSON.stringify([a.config_version, a.config_hash, [...a.applied].sort()]);
}

/** The view most daemons share (ties: the first to answer). */
function majorityKey(acks: readonly ClusterReloadAck[]): string {
  const counts = new Map<string, number>();
  for (const a of acks) counts.set(agreementKey(a), (counts.get(agreementKey(a)) ?? 0) + 1);
  return [...counts].reduce((best, cur) => (cur[1] > best[1] ? cur : best))[0];
}

/** Each item once (items are plain JSON). */
function uniq<T>(items: T[]): T[] {
  return uniqBy(items, (i) => JSON.stringify(i));
}

/** The first item of each key. */
function uniqBy<T>(items: T[], key: (item: T) => string): T[] {
  const out = new Map<string, T>();
  for (const i of items) if (!out.has(key(i))) out.set(key(i), i);
  return [...out.values()];
}

/** `applied` on every answering daemon; rejections of any daemon, each once. */
function mergedAck(acks: readonly ClusterReloadAck[]): ReloadAck {
  const versions = [...new Set(acks.map((a) => a.config_version))].sort((x, y) => x - y);
  return {
    request_id: acks[0]!.request_id,
    version: versions[versions.length - 1]!,
    applied: acks[0]!.applied.filter((id) => acks.every((a) => a.applied.includes(id))),
    rejected: uniq(acks.flatMap((a) => a.rejected)),
    rejected_jobs: uniq(acks.flatMap((a) => a.rejected_jobs ?? [])),
    errors: uniq(acks.flatMap((a) => a.errors ?? [])),
    // Each daemon reads its own copy of the bundle: the same change has another file on each.
    restart_required: uniqBy(
      acks.flatMap((a) => a.restart_required),
      (r) => JSON.stringify([r.agent_id ?? '', r.field]),
    ),
    elapsed_ms: Math.max(...acks.map((a) => a.elapsed_ms)),
  };
}

function ago(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 1000)} s`;
}

function daemonLine(a: ClusterReloadAck, agrees: boolean, color: boolean): string {
  const mark = agrees ? paint.green('✓', color) : paint.yellow('≠', color);
  const where = a.host && a.host !== a.daemon_id ? ` (${a.host})` : '';
  const differs = agrees ? '' : ' (differs from the others)';
  return `  ${mark} ${a.daemon_id}${where}: config v${a.config_version} hash ${a.config_hash.slice(0, 8)} applied=${a.applied.length} rejected=${rejectedCount(a)} elapsed=${Math.round(a.elapsed_ms)}ms${differs}`;
}

export function clusterReloadReport(input: ClusterReloadInput, color = false): ClusterReloadReport {
  const { acks } = input;
  const answered = new Set(acks.map((a) => a.daemon_id));
  const missing = input.expected.filter((m) => !answered.has(m.daemonId));
  const total = new Set([...input.expected.map((m) => m.daemonId), ...answered]).size;
  const lines: string[] = [];
  const missingLines = missing.map((m) => {
    const seen = m.lastHeartbeatAgoMs == null ? '' : ` (last heartbeat ${ago(m.lastHeartbeatAgoMs)} ago)`;
    return `  ${paint.red('✗', color)} ${m.daemonId}: no ack within ${ago(input.timeoutMs)}${seen}`;
  });
  if (acks.length === 0) {
    lines.push(`reload: no ack from any of ${total} daemons within ${ago(input.timeoutMs)}`, ...missingLines);
    return { lines, exitCode: 1 };
  }
  const merged = mergedAck(acks);
  const majority = majorityKey(acks);
  const disagree = acks.some((a) => agreementKey(a) !== majority);
  const versions = [...new Set(acks.map((a) => a.config_version))].sort((x, y) => x - y);
  const header = `reload ${versions.map((v) => `v${v}`).join('/')}: applied=${merged.applied.length} rejected=${rejectedCount(merged)} elapsed=${Math.round(merged.elapsed_ms)}ms`;
  // Today's agent, job and file lines, for the merged view.
  lines.push(header, ...formatReloadAck(merged, color).slice(1));
  lines.push(`daemons ${acks.length}/${total} answered${disagree ? ', and they disagree' : ''}:`);
  for (const a of acks) lines.push(daemonLine(a, agreementKey(a) === majority, color));
  lines.push(...missingLines);
  const exitCode = missing.length > 0 || disagree ? 3 : rejectedCount(merged) > 0 ? 2 : 0;
  return { lines, exitCode };
}
