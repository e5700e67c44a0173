/**
 * JSON Schema of `cluster.yaml`: the single source of the type below and of the reference in `docs/`.
 * Restart required. An absent file means single-host mode.
 */
import type { FromSchema } from 'json-schema-to-ts';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

export const clusterFileSchema = {
  $id: 'cluster.yaml',
  title: 'Cluster mode (cluster.yaml)',
  description:
    'Several daemons sharing poller jobs and one config over PostgreSQL, with NATS as the control plane. Host-local; restart required. Absent: single-host mode.',
  type: 'object',
  additionalProperties: false,
  required: ['postgres'],
  properties: {
    enabled: {
      type: 'boolean',
      default: true,
      description: '`false` keeps the file but runs in single-host mode.',
    },
    daemon_id: {
      type: 'string',
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$',
      maxLength: 64,
      description:
        'This daemon in the cluster (unique per host): at most 64 letters, digits, `_`, `.`, `-`. Default: the host name.',
    },
    postgres: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: {
        url: {
          type: 'string',
          minLength: 1,
          description: '`postgres://user:pass@host:port/db`, usually `${file:./secrets/pg.url}`.',
        },
        schema: {
          type: 'string',
          pattern: '^[a-z_][a-z0-9_]*$',
          maxLength: 63,
          default: 'agent',
          description: 'Schema of the cluster tables (plain lower-case identifier).',
        },
        pool_max: {
          type: 'integer',
          minimum: 2,
          maximum: 200,
          default: 10,
          description: 'Sessions this daemon opens at most.',
        },
      },
    },
    claim: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        max_concurrent_ticks: {
          type: 'integer',
          minimum: 1,
          maximum: 10000,
          default: 64,
          description: 'Ticks this daemon runs at the same time at most.',
        },
        poll_max_ms: {
          type: 'integer',
          minimum: 50,
          maximum: 60000,
          default: 1000,
          description: 'Longest sleep of the claim loop between two looks at the job table.',
        },
      },
    },
    chat: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description:
        'Chat agents across the daemons: one owner per single-consumer channel instance (`chat_b`), inbound messages through a NATS JetStream stream partitioned by chat. The same values on every daemon.',
      properties: {
        partitions: {
          type: 'integer',
          minimum: 1,
          maximum: 1024,
          default: 32,
          description:
            'Inbound partitions: each chat maps to one, each partition is run by one daemon at a time (its turns in order). The same on every daemon; changing it re-maps chats, so change it with no message in flight.',
        },
        owner_ttl_secs: {
          type: 'integer',
          minimum: 3,
          maximum: 300,
          default: 15,
          description:
            'How long a channel instance owner or a partition owner keeps its lease without renewing it: the failover time of inbound chat.',
        },
        ack_wait_secs: {
          type: 'integer',
          minimum: 5,
          maximum: 3600,
          default: 30,
          description:
            'How long an inbound message handed to a daemon waits for its turn to end before another daemon gets it (a crashed daemon repeats at most its turns in flight, after this).',
        },
      },
    },
    heartbeat: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        interval_secs: {
          type: 'integer',
          minimum: 1,
          maximum: 60,
          default: 5,
          description: 'How often this daemon writes its membership row.',
        },
        stale_after_secs: {
          type: 'integer',
          minimum: 3,
          maximum: 600,
          default: 15,
          description:
            'The failover window: a member not seen for this long is dead (its leases are claimable), and a daemon that could not heartbeat for this long (minus a margin) stops its ticks. At least 3 × `interval_secs`.',
        },
      },
    },
  },
} as const;

export type ClusterFile = FromSchema<typeof clusterFileSchema>;
