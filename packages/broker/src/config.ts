import { isAbsolute, join, resolve } from 'node:path';
import { BrokerError } from './errors.js';

/** JSON Schema (draft-07) of `broker.yaml`. */
export const brokerConfigSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
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
        '`local`: in-process, reachable by local processes of the same user over a mode-0600 Unix socket; `nats`: a NATS server.',
    },
    url: {
      type: 'string',
      description:
        'NATS server URL (kind `nats`, required there), e.g. `nats://127.0.0.1:4222`; comma-separate several.',
    },
    socket_path: {
      type: 'string',
      description:
        'Unix socket of the local broker; default `<data_dir>/broker.sock`. Relative paths resolve against the working directory.',
    },
  },
  // kind nats needs url: either kind is local (or absent, which means local) or url is given.
  anyOf: [{ properties: { kind: { const: 'local' } } }, { required: ['url'] }],
} as const;

/** `broker.yaml` as written by the operator. */
export interface BrokerConfigFile {
  kind?: 'local' | 'nats';
  url?: string;
  socket_path?: string;
}

/** What `createBroker` / `connectBroker` take: `broker.yaml` with defaults applied and paths resolved. */
export interface BrokerConfig {
  kind: 'local' | 'nats';
  /** NATS server URL; required for `nats`. */
  url?: string;
  /** Absolute path of the local broker socket; for `local`. */
  socketPath?: string;
}

export const DEFAULT_SOCKET_FILE = 'broker.sock';

export function defaultSocketPath(dataDir: string): string {
  return join(resolve(dataDir), DEFAULT_SOCKET_FILE);
}

function invalid(message: string): BrokerError {
  return new BrokerError('BROKER_CONFIG_INVALID', `broker.yaml: ${message}`);
}

/**
 * Validates a parsed `broker.yaml` (`undefined`/`null` = empty file) against `brokerConfigSchema`
 * and resolves it: `kind` defaults to `local`, `socket_path` to `<dataDir>/broker.sock`, a relative
 * `socket_path` resolves against `cwd` (default: the process's working directory).
 */
export function resolveBrokerConfig(raw: unknown, opts: { dataDir: string; cwd?: string }): BrokerConfig {
  const file = raw ?? {};
  if (typeof file !== 'object' || Array.isArray(file))
    throw invalid('must be a mapping with kind, url, socket_path');
  const obj = file as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!(key in brokerConfigSchema.properties)) {
      throw invalid(`unknown field "${key}"; allowed fields are kind, url, socket_path`);
    }
  }
  const kind = obj.kind ?? 'local';
  if (kind !== 'local' && kind !== 'nats')
    throw invalid(`kind must be "local" or "nats", got ${JSON.stringify(kind)}`);
  if (obj.url !== undefined && (typeof obj.url !== 'string' || obj.url.trim() === '')) {
    throw invalid('url must be a non-empty string like nats://127.0.0.1:4222');
  }
  if (obj.socket_path !== undefined && (typeof obj.socket_path !== 'string' || obj.socket_path === '')) {
    throw invalid('socket_path must be a non-empty string');
  }
  if (kind === 'nats') {
    if (obj.url === undefined) throw invalid('kind nats needs url, e.g. url: nats://127.0.0.1:4222');
    return { kind, url: obj.url as string };
  }
  const socketPath =
    obj.socket_path === undefined
      ? defaultSocketPath(opts.dataDir)
      : isAbsolute(obj.socket_path as string)
        ? (obj.socket_path as string)
        : resolve(opts.cwd ?? process.cwd(), obj.socket_path as string);
  return { kind, socketPath };
}
