/**
 * JSON Schemas of `pollers.yaml`: the subsystem's settings and one job's envelope (id, kind, agent,
 * schedule, config, ...). The kind's own schema checks `config`. Single source of the types below and of
 * the reference in `docs/config/`.
 */
import {
  AGENT_ID_PATTERN,
  ID_LIMITS,
  NAME_PATTERN,
  nameSchema,
  recipientSchema,
  type OneOfFailure,
} from '@agent/config-snapshot';
import type { FromSchema } from 'json-schema-to-ts';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

/** Job ids (`pollers.jobs[].id`): they reach metric labels, log fields, admin paths. */
export const JOB_ID_MAX_LENGTH = 128;
/** Kind names: lower case, digits and `_`, starting with a letter. */
const KIND_PATTERN = '^[a-z][a-z0-9_]*$';

const scheduleSchema = {
  description: 'Exactly one of `every_secs`, `cron`, `at`.',
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['every_secs'],
      properties: { every_secs: { type: 'integer', minimum: 1, description: 'Repeat every N seconds.' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['cron'],
      properties: {
        cron: { type: 'string', description: '6 fields: sec min hour dom mon dow.' },
        tz: { type: 'string', description: 'IANA zone; always honoured. Default UTC.' },
        stagger_jitter_ms: {
          type: 'integer',
          minimum: 0,
          description: 'Per-job jitter; overrides `default_jitter_ms`.',
        },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['at'],
      properties: {
        at: { type: 'string', description: 'RFC 3339 instant; fires once, then the job stays paused.' },
      },
    },
  ],
} as const;

const deliverSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['channel', 'to'],
  properties: {
    channel: {
      ...nameSchema,
      description: 'Channel plugin name (at most 64 characters); the job agent must have a binding for it.',
    },
    to: {
      ...recipientSchema,
      description: 'Recipient id on that channel: at most 256 characters, no control characters.',
    },
  },
} as const;

export const jobSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'kind', 'agent', 'schedule', 'config'],
  properties: {
    id: {
      type: 'string',
      pattern: NAME_PATTERN,
      maxLength: JOB_ID_MAX_LENGTH,
      description:
        'Unique; key for state, metrics, admin and lease. At most 128 characters: letters, digits, `_`, `.`, `-`, starting with a letter or digit.',
    },
    kind: {
      type: 'string',
      pattern: KIND_PATTERN,
      maxLength: ID_LIMITS.name,
      description:
        'A registered kind: mail, rss, webhook_poll, calendar or custom (at most 64 lower-case letters, digits, `_`).',
    },
    agent: {
      type: 'string',
      pattern: AGENT_ID_PATTERN,
      maxLength: ID_LIMITS.agent,
      description: 'Agent whose credentials and bindings the job uses (an agent id: at most 64 characters).',
    },
    schedule: scheduleSchema,
    config: {
      type: 'object',
      // `deliver` is every kind's; bounded here, so that no kind's own schema can let a huge value through.
      properties: { deliver: deliverSchema },
      description: 'Kind-specific options, validated by the kind.',
    },
    failure_to: { ...deliverSchema, description: 'Where failure alerts go; omitted = logged only.' },
    paused_on_boot: { type: 'boolean', default: false, description: 'Persist `paused = 1` at every start.' },
  },
} as const;

export const pollersFileSchema = {
  $id: 'pollers.yaml',
  title: 'Poller subsystem (pollers.yaml)',
  description: 'An absent file means the subsystem is off: no jobs start and no admin endpoint exists.',
  type: 'object',
  additionalProperties: false,
  required: ['pollers'],
  properties: {
    pollers: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: {
          type: 'boolean',
          default: true,
          description: 'Master switch; `false` skips everything below.',
        },
        state_db: {
          type: 'string',
          default: './data/poller.db',
          description: 'SQLite file; created if missing.',
        },
        default_jitter_ms: { type: 'integer', minimum: 0, default: 5000 },
        lease_ttl_factor: {
          type: 'number',
          exclusiveMinimum: 0,
          default: 2.0,
          description: 'Lease TTL = factor x interval, minimum 30 s.',
        },
        tick_timeout_secs: {
          type: 'integer',
          minimum: 1,
          default: 120,
          description:
            "Deadline of a tick's fetch, at most 0.8 x the lease TTL so a short job's stays below its lease.",
        },
        failure_alert_cooldown_secs: { type: 'integer', minimum: 0, default: 3600 },
        max_concurrent_ticks: {
          type: 'integer',
          minimum: 1,
          maximum: 10000,
          default: 64,
          description:
            'Scheduled ticks running at once; the others wait their turn (late, never skipped). Manual runs do not wait. Cluster mode uses `cluster.yaml` `claim.max_concurrent_ticks` instead.',
        },
        breaker_threshold: { type: 'integer', minimum: 1, default: 5 },
        kind_packages: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          default: [],
          description: 'Third-party kind packages, resolved from the config directory.',
        },
        jobs: {
          type: 'array',
          default: [],
          description: 'Job entries; each is validated on its own (an invalid job never stops its siblings).',
          items: { type: 'object' },
        },
      },
    },
  },
} as const;

// Defaulted properties are required in these types: ajv fills defaults before anyone reads them.
export type PollerJob = FromSchema<typeof jobSchema>;
export type PollersFile = FromSchema<typeof pollersFileSchema>;
export type PollersSettings = Omit<NonNullable<PollersFile['pollers']>, 'jobs'>;

/** Words for a schedule that matches none or several of `every_secs`, `cron`, `at` (see `validateAt`). */
export function explainSchedule(f: OneOfFailure): { code: string; message: string; hint?: string } {
  // One code for "the schedule is wrong", whichever check found it (the job validation uses it too).
  const code = 'POLLER_BAD_SCHEDULE';
  const key = f.given.length === 1 ? f.given[0]! : undefined;
  if (key === undefined)
    return {
      code,
      message:
        f.given.length === 0
          ? `needs exactly one of ${f.branches.join(', ')}`
          : `has ${f.given.join(' and ')}; exactly one of ${f.branches.join(', ')} is allowed`,
      hint: `keep exactly one of ${f.branches.join(', ')}`,
    };
  const bad = f.bad;
  return {
    code,
    message:
      key === 'every_secs' && !(Number.isInteger(bad) && (bad as number) >= 1)
        ? `every_secs ${JSON.stringify(bad)} is not a whole number of seconds >= 1`
        : key !== 'every_secs' && typeof bad !== 'string'
          ? `${key} ${JSON.stringify(bad)} is not a string`
          : `invalid "${key}" schedule${f.extra.length ? `: ${f.extra.map((k) => `"${k}"`).join(', ')} not allowed with it` : ''}`,
    hint: scheduleHint(key),
  };
}

function scheduleHint(key: string): string {
  switch (key) {
    case 'every_secs':
      return 'every_secs is a whole number of seconds >= 1, and takes no other keys';
    case 'cron':
      return 'cron takes only tz and stagger_jitter_ms beside it';
    case 'at':
      return 'at is an RFC 3339 instant and takes no other keys';
    default:
      return 'check the schedule keys';
  }
}
