/**
 * Finding the running daemon's files from anywhere. Relative paths in the config (`data_dir`, `socket_path`)
 * resolve against the daemon's working directory, which a client does not know; the admin address
 * (`admin.listen`) does not depend on it. So a client asks `GET /admin/info` for the absolute paths first and
 * falls back to resolving against its own working directory when no daemon answers.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AdminInfo } from '@agent/admin-api';
import type { BrokerConfig } from '@agent/broker';
import { adminRequest, resolveAdminTarget } from './admin-client.js';
import type { CliIO } from './io.js';

/** A daemon on loopback answers at once; this only bounds a port that accepts and never answers. */
export const INFO_TIMEOUT_MS = 1000;

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

const samePath = (a: string, b: string): boolean => real(a) === real(b);

/**
 * The info of the daemon serving `configDir` (its admin address from `AGENT_ADMIN_URL`, else `runtime.yaml`
 * `admin.listen`), or null: nothing answers, or the daemon that answers runs another config dir.
 */
export async function fetchDaemonInfo(
  io: Pick<CliIO, 'cwd' | 'env'>,
  configDir: string,
  timeoutMs = INFO_TIMEOUT_MS,
): Promise<AdminInfo | null> {
  try {
    const target = resolveAdminTarget({ configDir, cwd: io.cwd, env: io.env });
    const info = await adminRequest<AdminInfo>(target, 'GET', '/admin/info', { timeoutMs });
    if (typeof info?.config_dir !== 'string' || !samePath(info.config_dir, resolve(io.cwd, configDir)))
      return null;
    return info;
  } catch {
    return null;
  }
}

/**
 * The broker a client should connect to: for `local`, the socket the running daemon reports; else (or with
 * no daemon answering) `fallback`, which resolved `data_dir` against the client's working directory.
 */
export async function daemonBrokerConfig(
  fallback: BrokerConfig,
  io: Pick<CliIO, 'cwd' | 'env'>,
  configDir: string,
): Promise<BrokerConfig> {
  if (fallback.kind !== 'local') return fallback;
  const info = await fetchDaemonInfo(io, configDir);
  return info?.broker.kind === 'local' && info.broker.socket
    ? { kind: 'local', socketPath: info.broker.socket }
    : fallback;
}
