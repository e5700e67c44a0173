// The config files of a fault run, as text. The operator's directory holds the whole config (it pushes the
// bundle and runs `agent reload`, straight to the servers); each daemon's holds only its host-local files,
// whose links to PostgreSQL and NATS go through that daemon's fault proxies.

export interface Link {
  host: string;
  port: number;
}

export interface ClusterTiming {
  heartbeatIntervalSecs: number;
  staleAfterSecs: number;
  /** Longest sleep of the claim loop. */
  pollMaxMs: number;
  /** `cluster.yaml` `chat`, when the chat workload runs. */
  chat?: ChatTiming;
}

interface ChatTiming {
  partitions: number;
  ownerTtlSecs: number;
  ackWaitSecs: number;
}

/** `memory.yaml` of a chat run: a turn is given its chat's whole history (the most the schema allows). */
export const CHAT_MEMORY_MESSAGES = 1000;

const pgUrl = (l: Link): string => `postgres://postgres@${l.host}:${l.port}/postgres`;
const natsUrl = (l: Link): string => `nats://${l.host}:${l.port}`;

function clusterYaml(daemonId: string, pg: Link, schema: string, t: ClusterTiming): string {
  return [
    `daemon_id: ${daemonId}`,
    'postgres:',
    `  url: ${pgUrl(pg)}`,
    `  schema: ${schema}`,
    '  pool_max: 4',
    'claim:',
    `  poll_max_ms: ${t.pollMaxMs}`,
    'heartbeat:',
    `  interval_secs: ${t.heartbeatIntervalSecs}`,
    `  stale_after_secs: ${t.staleAfterSecs}`,
    ...(t.chat
      ? [
          'chat:',
          `  partitions: ${t.chat.partitions}`,
          `  owner_ttl_secs: ${t.chat.ownerTtlSecs}`,
          `  ack_wait_secs: ${t.chat.ackWaitSecs}`,
        ]
      : []),
    '',
  ].join('\n');
}

const RUNTIME_YAML = 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n';

/** `cluster.yaml`, `broker.yaml`, `runtime.yaml` (and `memory.yaml` with chat) of one daemon, through its proxies. */
export function hostFiles(
  daemonId: string,
  links: { pg: Link; nats: Link },
  schema: string,
  t: ClusterTiming,
): Record<string, string> {
  return {
    'cluster.yaml': clusterYaml(daemonId, links.pg, schema, t),
    'broker.yaml': `kind: nats\nurl: ${natsUrl(links.nats)}\n`,
    'runtime.yaml': RUNTIME_YAML,
    ...(t.chat ? { 'memory.yaml': `enabled: true\nmax_messages: ${CHAT_MEMORY_MESSAGES}\n` } : {}),
  };
}

export interface OperatorFilesInput {
  pg: Link;
  nats: Link;
  schema: string;
  timing: ClusterTiming;
  /** The cluster-wide files of the workload: `pollers.yaml`, `plugins/chat_b.yaml`, `agents.d/a.yaml`. */
  workload: Record<string, string>;
  /** The model's `base_url` (the chat workload's fake); without it the provider points nowhere. */
  modelBaseUrl?: string;
}

/**
 * The operator's directory: every cluster-wide file (pushed as the bundle) plus host-local files that reach
 * the servers directly. Without the chat workload the model provider is never called (the agent only
 * delivers poller items).
 */
export function operatorFiles(o: OperatorFilesInput): Record<string, string> {
  return {
    ...hostFiles('operator', { pg: o.pg, nats: o.nats }, o.schema, o.timing),
    'llm.yaml': `providers:\n  main:\n    type: openai\n    base_url: ${o.modelBaseUrl ?? 'http://127.0.0.1:9/v1'}\n    api_key: key-unused-0000\n`,
    ...o.workload,
  };
}
