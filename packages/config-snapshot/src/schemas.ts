/**
 * JSON Schemas of every file in the config directory: the single source of truth. They validate (ajv),
 * they give the TypeScript types (`FromSchema`) and they generate the reference in `docs/config/`.
 */
import type { FromSchema } from 'json-schema-to-ts';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

/**
 * Limits of ids and names. They reach metric labels, log fields, admin paths and file names, so each is
 * bounded and made of plain characters; recipients (`deliver.to`) are free-form but bounded too.
 */
export const ID_LIMITS = {
  /** Agent ids (the file names in `agents.d/`). */
  agent: 64,
  /** Provider, plugin, instance, account, channel and tool names, and kind names. */
  name: 64,
  /** Recipients: `deliver.to`, `failure_to.to`, `outbound_allowlist` entries. */
  recipient: 256,
} as const;

/** Names of providers, plugins, instances, accounts and channels: letters, digits, `_`, `.`, `-`. */
export const NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
const idPattern = NAME_PATTERN;
/** Agent ids: letters, digits, `_` and `-` (no `.`: they are file and directory names). */
export const AGENT_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]*$';
/** Recipients may hold any character but a control character (a line break would forge log lines). */
export const RECIPIENT_PATTERN = '^[^\\u0000-\\u001f\\u007f]+$';

export const nameSchema = { type: 'string', pattern: idPattern, maxLength: ID_LIMITS.name } as const;
export const recipientSchema = {
  type: 'string',
  minLength: 1,
  maxLength: ID_LIMITS.recipient,
  pattern: RECIPIENT_PATTERN,
} as const;
const names = { pattern: idPattern, maxLength: ID_LIMITS.name } as const;

export const llmFileSchema = {
  $id: 'llm.yaml',
  title: 'Model providers (llm.yaml)',
  description: 'Model providers the agents call, keyed by provider name.',
  type: 'object',
  additionalProperties: false,
  required: ['providers'],
  properties: {
    providers: {
      type: 'object',
      description:
        'Keyed by `<provider_name>` (at most 64 letters, digits, `_`, `.`, `-`); agents name a provider in `model.provider`.',
      propertyNames: names,
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['type', 'base_url', 'api_key'],
        properties: {
          type: {
            enum: ['openai', 'anthropic'],
            description:
              'Wire protocol: `openai` (OpenAI-compatible chat completions, `base_url` includes the version prefix such as `/v1`) or `anthropic` (Anthropic messages, `base_url` is the host root).',
          },
          base_url: {
            type: 'string',
            format: 'uri',
            description: 'Provider endpoint. Hot: takes effect at the next turn.',
          },
          api_key: {
            type: 'string',
            minLength: 1,
            description:
              'Usually `${file:<path>}` (mode 600). Hot: a rotated key takes effect at the next turn.',
          },
          timeout_ms: {
            type: 'integer',
            minimum: 1000,
            maximum: 600000,
            default: 60000,
            description: 'Per attempt.',
          },
          max_retries: {
            type: 'integer',
            minimum: 0,
            maximum: 10,
            default: 2,
            description: 'Retries on 429, 5xx and network errors.',
          },
        },
      },
    },
  },
} as const;

export const bindingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['plugin'],
  properties: {
    plugin: {
      ...nameSchema,
      description: 'Channel plugin name (`chat_a`, `chat_b`, `log`, ...).',
    },
    instance: {
      ...nameSchema,
      description: 'Plugin instance name; omitted = any instance of the plugin.',
    },
    allowed_tools: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: ID_LIMITS.name },
      default: [],
      description:
        'Tools the model may see and call on this binding (names of at most 64 characters); `"*"` means all. Hot.',
    },
    outbound_allowlist: {
      type: 'object',
      propertyNames: names,
      additionalProperties: {
        type: 'array',
        items: { type: 'string', maxLength: ID_LIMITS.recipient, pattern: RECIPIENT_PATTERN },
      },
      default: {},
      description:
        'Channel -> recipient ids this binding may send to with `send_message` (each at most 256 characters). Hot.',
    },
    system_prompt_extra: {
      type: 'string',
      default: '',
      description: 'Extra system prompt text for this binding only. Hot.',
    },
  },
} as const;

export const agentFileSchema = {
  $id: 'agents.d/<agent_id>.yaml',
  title: 'Agent definition (agents.d/<agent_id>.yaml)',
  description:
    'One agent; its id is the file name without `.yaml`: at most 64 letters, digits, `_` and `-`, starting with a letter or digit.',
  type: 'object',
  additionalProperties: false,
  required: ['model', 'inbound_bindings'],
  properties: {
    description: { type: 'string', description: 'Free text for operators.' },
    model: {
      type: 'object',
      additionalProperties: false,
      required: ['provider', 'name'],
      description: 'Model used by this agent. Hot.',
      properties: {
        provider: { type: 'string', description: 'A key of `providers` in llm.yaml.' },
        name: { type: 'string', minLength: 1, description: 'Model name sent to the provider.' },
        max_tokens: { type: 'integer', minimum: 1, default: 1024 },
        max_tool_rounds: {
          type: 'integer',
          minimum: 1,
          maximum: 50,
          default: 8,
          description: 'Model calls per turn at most.',
        },
      },
    },
    system_prompt: { type: 'string', default: '', description: 'System prompt of every binding. Hot.' },
    inbound_bindings: {
      type: 'array',
      items: bindingSchema,
      description: 'Channel bindings, addressed by zero-based `binding_index`.',
    },
    credentials: {
      type: 'object',
      propertyNames: names,
      additionalProperties: nameSchema,
      default: {},
      description:
        'Provider accounts this agent uses, keyed by kind (for example `mail: work`); each names an entry of `accounts` in `plugins/<kind>.yaml`.',
    },
    workspace: {
      type: 'string',
      minLength: 1,
      description: 'Working directory of the agent. Restart required.',
    },
    skills_dir: { type: 'string', minLength: 1, description: 'Skills directory. Restart required.' },
    transcripts_dir: {
      type: 'string',
      minLength: 1,
      description: 'Transcript directory (JSONL per session). Restart required.',
    },
  },
} as const;

export const brokerFileSchema = {
  $id: 'broker.yaml',
  title: 'Broker (broker.yaml)',
  description: 'Message broker for control messages such as `control.reload`. Restart required.',
  type: 'object',
  additionalProperties: false,
  properties: {
    kind: {
      enum: ['local', 'nats'],
      default: 'local',
      description:
        '`local`: in-process, reachable by local processes of the same user over a mode-600 Unix socket; `nats`: a NATS server.',
    },
    url: { type: 'string', description: 'NATS server URL (kind `nats`), e.g. `nats://127.0.0.1:4222`.' },
    socket_path: {
      type: 'string',
      description: 'Unix socket of the local broker; default `<data_dir>/broker.sock`.',
    },
    subject_prefix: {
      type: 'string',
      maxLength: 64,
      pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$',
      description:
        'Kind `nats` only: put in front of every subject (`<prefix>.control.reload`), so deployments sharing one NATS server (production and staging, say) never answer each other. Every daemon and CLI of one deployment uses the same broker.yaml. Default: none.',
    },
  },
} as const;

export const memoryFileSchema = {
  $id: 'memory.yaml',
  title: 'Conversation memory (memory.yaml)',
  description: 'Per-session conversation memory. Restart required.',
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean', default: true },
    path: {
      type: 'string',
      default: './data/memory.db',
      description: 'SQLite file. Not used in cluster mode: memory lives in PostgreSQL there.',
    },
    max_messages: {
      type: 'integer',
      minimum: 0,
      maximum: 1000,
      default: 40,
      description: 'Messages of history given to the model per turn.',
    },
  },
} as const;

const listenSchema = {
  type: 'string',
  pattern: '^[^\\s:]+:[0-9]{1,5}$|^\\[[0-9a-fA-F:]+\\]:[0-9]{1,5}$',
} as const;

export const runtimeFileSchema = {
  $id: 'runtime.yaml',
  title: 'Daemon runtime (runtime.yaml)',
  type: 'object',
  additionalProperties: false,
  properties: {
    data_dir: {
      type: 'string',
      default: './data',
      description:
        "Where the daemon keeps its state (sockets, offsets, transcripts by default). A relative path resolves against the daemon's working directory, like every relative path in the config (not against the config dir); client commands ask the running daemon for the absolute path (`GET /admin/info`), so they work from any directory.",
    },
    reload: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: {
          type: 'boolean',
          default: true,
          description: '`false` turns off both the file watcher and the `control.reload` subscriber.',
        },
        debounce_ms: {
          type: 'integer',
          minimum: 0,
          default: 500,
          description: 'Watcher fires this long after the last save.',
        },
        max_wait_ms: {
          type: 'integer',
          minimum: 0,
          default: 5000,
          description: 'Cap on debouncing during a burst of saves.',
        },
      },
    },
    metrics: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: true },
        listen: {
          ...listenSchema,
          default: '127.0.0.1:9090',
          description: 'host:port of `/metrics`. Restart required.',
        },
      },
    },
    admin: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        listen: {
          ...listenSchema,
          default: '127.0.0.1:9091',
          description: 'Loopback only. Restart required.',
        },
        token_file: {
          type: 'string',
          description: 'Optional file (mode 600) holding a bearer token the admin API then requires.',
        },
      },
    },
    log: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        level: { enum: ['debug', 'info', 'warn', 'error'], default: 'info' },
        format: { enum: ['kv', 'json'], default: 'kv' },
      },
    },
    sessions: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        max_queue: {
          type: 'integer',
          minimum: 1,
          default: 32,
          description:
            'Inbound messages waiting per session; beyond it the oldest waiting one is dropped and logged.',
        },
        turn_timeout_ms: { type: 'integer', minimum: 1000, default: 120000 },
      },
    },
    shutdown_grace_ms: {
      type: 'integer',
      minimum: 0,
      default: 10000,
      description: 'In-flight turns may finish this long after SIGTERM.',
    },
  },
} as const;

/** Plugin files: `instances` for channel plugins, `accounts` for provider accounts. */
export const pluginFileSchema = {
  $id: 'plugins/<plugin>.yaml',
  title: 'Plugin file (plugins/<plugin>.yaml)',
  description:
    'Channel plugin instances (`instances`) and provider accounts (`accounts`). Changes to instance blocks need a restart; rotated secrets are applied by `POST /admin/credentials/reload` or the next reload.',
  type: 'object',
  additionalProperties: false,
  properties: {
    // Names are checked block by block (`blockNameSchema`): a bad name rejects its block, not the file.
    instances: {
      type: 'object',
      additionalProperties: { type: 'object' },
      default: {},
      description:
        'Channel instances by name (at most 64 letters, digits, `_`, `.`, `-`, starting with a letter or digit).',
    },
    accounts: {
      type: 'object',
      additionalProperties: { type: 'object' },
      default: {},
    },
  },
} as const;

/** The name of one block of a plugin file (`{ [name]: null }`), checked on its own. */
export const blockNameSchema = { type: 'object', propertyNames: names } as const;

// Defaulted properties are required in these types: ajv fills defaults before anyone reads them.
export type LlmFile = FromSchema<typeof llmFileSchema>;
export type ProviderConfig = LlmFile['providers'][string];
export type AgentFile = FromSchema<typeof agentFileSchema>;
export type Binding = FromSchema<typeof bindingSchema>;
export type BrokerFile = FromSchema<typeof brokerFileSchema>;
export type MemoryFile = FromSchema<typeof memoryFileSchema>;
export type RuntimeFile = FromSchema<typeof runtimeFileSchema>;
export type PluginFile = FromSchema<typeof pluginFileSchema>;
