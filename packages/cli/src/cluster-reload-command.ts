/** The cluster branch of `agent reload`: taken when a daemon answers `control.cluster.members`. */
import { randomUUID } from 'node:crypto';
import type { Broker } from '@agent/broker';
import { clusterReloadReport, type ClusterMembersAnswer, type ClusterReloadAck } from './cluster-reload.js';
import type { CliIO } from './io.js';
import { CLUSTER_MEMBERS_SUBJECT } from './subjects.js';

const MEMBERS_TIMEOUT_MS = 2000;

/**
 * Reloads every live daemon and prints one report; `undefined` when the broker reaches no cluster (the
 * local broker, or nobody answers the members subject): the caller then runs today's single-daemon reload.
 */
export async function tryClusterReload(
  io: CliIO,
  broker: Broker,
  args: { json: boolean; timeoutMs: number; subject: string; ackSubject: string; membersSubject?: string },
): Promise<number | undefined> {
  if (broker.kind !== 'nats') return undefined;
  const { gatherAcks, isBrokerError } = await import('@agent/broker');
  let answer: ClusterMembersAnswer;
  try {
    answer = (await broker.request(
      args.membersSubject ?? CLUSTER_MEMBERS_SUBJECT,
      {},
      { timeoutMs: MEMBERS_TIMEOUT_MS },
    )) as ClusterMembersAnswer;
  } catch (err) {
    if (isBrokerError(err, 'BROKER_NO_RESPONDERS')) return undefined;
    throw err;
  }
  const members = answer?.members ?? [];
  const gathered = await gatherAcks(broker, {
    subject: args.subject,
    ackSubject: args.ackSubject,
    data: { request_id: randomUUID(), requested_by: 'cli' },
    expected: members.map((m) => m.daemon_id),
    timeoutMs: args.timeoutMs,
  });
  const report = clusterReloadReport(
    {
      expected: members.map((m) => ({ daemonId: m.daemon_id, lastHeartbeatAgoMs: m.seen_ago_ms })),
      acks: gathered.acks as unknown as ClusterReloadAck[],
      timeoutMs: args.timeoutMs,
    },
    io.color,
  );
  if (args.json)
    io.out(
      JSON.stringify({ acks: gathered.acks, missing: gathered.missing, exit_code: report.exitCode }, null, 2),
    );
  else for (const l of report.lines) io.out(l);
  return report.exitCode;
}
