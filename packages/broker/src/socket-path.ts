import { mkdir, lstat, unlink } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { dirname, isAbsolute } from 'node:path';
import type { Logger } from '@agent/log';
import { BrokerError } from './errors.js';

/** Linux keeps Unix socket paths in a 108-byte buffer, NUL included. */
export const MAX_SOCKET_PATH_BYTES = 107;

function currentUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

function unsafe(message: string): BrokerError {
  return new BrokerError('BROKER_SOCKET_UNSAFE', message);
}

export function assertSocketPathShape(socketPath: string): void {
  if (typeof socketPath !== 'string' || socketPath === '' || !isAbsolute(socketPath)) {
    throw new BrokerError(
      'BROKER_SOCKET_PATH_INVALID',
      `broker socket path must be an absolute path, got ${JSON.stringify(socketPath)}; resolve it against the data dir first`,
    );
  }
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new BrokerError(
      'BROKER_SOCKET_PATH_INVALID',
      `broker socket path is ${Buffer.byteLength(socketPath)} bytes, above the system limit of ${MAX_SOCKET_PATH_BYTES}; choose a shorter data dir or set socket_path in broker.yaml`,
    );
  }
}

/** Resolves true when something accepts connections on the socket. */
function isListening(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ path: socketPath });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/**
 * Makes `socketPath` ready for the daemon to bind:
 * - its parent directory is created (mode 0700) when missing, and must be a real directory owned by
 *   us that neither group nor others can write (otherwise someone else could swap the socket);
 * - an existing entry must be a socket owned by us: a live one means another daemon runs
 *   (BROKER_SOCKET_IN_USE), a dead one is left from a daemon that died and is removed.
 */
export async function prepareSocketPath(
  socketPath: string,
  logger: Logger,
  /** The owner required of directory and socket; the current user unless given (tests). */
  uid: number | undefined = currentUid(),
): Promise<void> {
  assertSocketPathShape(socketPath);
  const dir = dirname(socketPath);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const dirStat = await lstat(dir);
  if (!dirStat.isDirectory()) {
    throw unsafe(
      `broker socket directory ${dir} is not a directory (a symlink is refused); point socket_path at a private directory`,
    );
  }
  if (uid !== undefined && dirStat.uid !== uid) {
    throw unsafe(
      `broker socket directory ${dir} belongs to another user; use a directory owned by the daemon's user`,
    );
  }
  if ((dirStat.mode & 0o022) !== 0) {
    throw unsafe(
      `broker socket directory ${dir} is writable by group or others (mode ${(dirStat.mode & 0o777).toString(8)}); run "chmod go-w ${dir}" or choose a private directory`,
    );
  }

  let existing;
  try {
    existing = await lstat(socketPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!existing.isSocket()) {
    throw unsafe(`${socketPath} exists and is not a socket; move that file away or set another socket_path`);
  }
  if (uid !== undefined && existing.uid !== uid) {
    throw unsafe(`broker socket ${socketPath} belongs to another user; remove it or set another socket_path`);
  }
  if (await isListening(socketPath)) {
    throw new BrokerError(
      'BROKER_SOCKET_IN_USE',
      `another daemon is already serving the broker socket ${socketPath}; stop it first or use another data dir`,
    );
  }
  await unlink(socketPath);
  logger.info('removed stale broker socket', { socket_path: socketPath });
}
