import { isAbsolute, join, resolve } from 'node:path';
import { BrokerError } from './errors.js';
import { subjectPrefixProblem } from './subject-prefix.js';

/** `broker.yaml` as written by the operator. */
export interface BrokerConfigFile {
  kind?: 'local' | 'nats';
  url?: string;
  socket_path?: string;
  subject_prefix?: string;
}

/** What `createBroker` / `connectBroker` take: `broker.yaml` with defaults applied and paths resolved. */
export interface BrokerConfig {
  kind: 'local' | 'nats';
  /** NATS server URL; required for `nats`. */
  url?: string;
  /** Absolute path of the local broker socket; for `local`. */
  socketPath?: string;
  /** Put in front of every subject (`nats` only): deployments sharing one NATS server stay apart. */
  subjectPrefix?: string;
}

export const DEFAULT_SOCKET_FILE = 'broker.sock';

export function defaultSocketPath(dataDir: string): string {
  return join(resolve(dataDir), DEFAULT_SOCKET_FILE);
}

function invalid(message: string): BrokerError {
  return new BrokerError('BROKER_CONFIG_INVALID', `broker.yaml: ${message}`);
}

/**
 * Validates a parsed `broker.yaml` (`undefined`/`null` = empty file) (its JSON Schema lives in `@agent/config-snapshot`, which validates the file first)
 * and resolves it: `kind` defaults to `local`, `socket_path` to `<dataDir>/broker.sock`, a relative
 * `socket_path` resolves against `cwd` (default: the process's working directory).
 */
export function resolveBrokerConfig(raw: unknown, opts: { dataDir: string; cwd?: string }): BrokerConfig {
  const file = raw ?? {};
  if (typeof file !== 'object' || Array.isArray(file))
    throw invalid('must be a mapping with kind, url, socket_path');
  const obj = file as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!['kind', 'url', 'socket_path', 'subject_prefix'].includes(key)) {
      throw invalid(`unknown field "${key}"; allowed fields are kind, url, socket_path, subject_prefix`);
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
  if (obj.subject_prefix !== undefined) {
    if (kind !== 'nats')
      throw invalid(
        'subject_prefix applies to kind nats only (a local broker is private to its data directory)',
      );
    const problem =
      typeof obj.subject_prefix === 'string' ? subjectPrefixProblem(obj.subject_prefix) : 'not a string';
    if (problem !== null) throw invalid(`subject_prefix ${JSON.stringify(obj.subject_prefix)}: ${problem}`);
  }
  if (kind === 'nats') {
    if (obj.url === undefined) throw invalid('kind nats needs url, e.g. url: nats://127.0.0.1:4222');
    return {
      kind,
      url: obj.url as string,
      ...(obj.subject_prefix === undefined ? {} : { subjectPrefix: obj.subject_prefix as string }),
    };
  }
  const socketPath =
    obj.socket_path === undefined
      ? defaultSocketPath(opts.dataDir)
      : isAbsolute(obj.socket_path as string)
        ? (obj.socket_path as string)
        : resolve(opts.cwd ?? process.cwd(), obj.socket_path as string);
  return { kind, socketPath };
}
