// Throwaway PostgreSQL and NATS servers for the cluster fault harness: each in its own scratch directory,
// on a free port, waited for until it answers, stopped by PID (also when the process exits on a failure).
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '@agent/timers';
import { freePort, killAndWait, onExitKill, processAlive } from './process-tools.js';

const noop = (): void => {};

export interface PgServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The postmaster's PID (changes on restart). */
  readonly pid: number;
  readonly dataDir: string;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth). */
  readonly url: string;
  /** Stops the server (`immediate`: SIGQUIT, a crash without a checkpoint; otherwise a fast shutdown) and starts it again on the same port. */
  restart(options?: { immediate?: boolean }): Promise<void>;
  /** Stops the server and removes its scratch directory. */
  stop(): Promise<void>;
}

const PG_BIN_CANDIDATES = (): string[] => {
  const dirs: string[] = [];
  try {
    dirs.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim());
  } catch {
    // pg_config is in libpq-dev, which a server install may lack; the Debian layout is next.
  }
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => join(root, v, 'bin')));
  }
  return dirs;
};

/** The first directory holding both `initdb` and `pg_ctl`; a clear error (never a skip) otherwise. */
export function findPgBin(candidates: string[] = PG_BIN_CANDIDATES()): string {
  const found = candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
  if (found !== undefined) return found;
  throw new Error(
    `PostgreSQL server binaries (initdb, pg_ctl) not found in ${candidates.join(', ') || '(no candidates)'}; ` +
      'install them (Debian: apt-get install postgresql) to run the cluster fault harness',
  );
}

/**
 * initdb refuses to run as root. As root, every PostgreSQL command runs as the `postgres` OS user (created by
 * Debian's package) through `runuser`, and the scratch directory is handed to that user; as anyone else the
 * commands run directly. A sound choice for a test machine: no setuid tricks, no change to the system.
 */
function pgUser(): { wrap: (cmd: string, args: string[]) => [string, string[]]; own: (dir: string) => void } {
  if (process.getuid?.() !== 0) return { wrap: (c, a) => [c, a], own: () => {} };
  let uid: number;
  let gid: number;
  try {
    uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
  } catch {
    throw new Error(
      'running as root, but there is no `postgres` OS user to run initdb as; install postgresql',
    );
  }
  return {
    wrap: (c, a) => ['runuser', ['-u', 'postgres', '--', c, ...a]],
    own: (dir) => chownSync(dir, uid, gid),
  };
}

function run(cmd: [string, string[]]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd[0], cmd[1], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.once('error', reject);
    p.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd[1].join(' ')} exited ${code}:\n${out}`)),
    );
  });
}

/** True once a TCP connection to the port succeeds. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

interface PgControl {
  readonly pid: number;
  start(): Promise<void>;
  /** SIGINT is a fast shutdown (clients are disconnected); SIGQUIT an immediate one (a crash, no checkpoint). */
  halt(signal: 'SIGINT' | 'SIGQUIT'): Promise<void>;
}

/** initdb in `dir/data`, then start and stop by PID on `port` with the socket in `dir`. */
async function pgControl(
  bin: string,
  user: ReturnType<typeof pgUser>,
  dir: string,
  port: number,
): Promise<PgControl> {
  const dataDir = join(dir, 'data');
  const initdb = ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '-N'];
  await run(user.wrap(join(bin, 'initdb'), initdb));
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    // A test server: an OS crash is not under test, so nothing is fsynced. A server crash is (db-restart):
    // every commit is written to the kernel before it is acknowledged (synchronous_commit stays on), or a
    // crash would lose acknowledged commits, fencing epochs among them, which no production set-up allows.
    '-c fsync=off',
    '-c full_page_writes=off',
  ].join(' ');
  const pgCtl = ['-D', dataDir, '-l', join(dir, 'pg.log'), '-w', '-t', '20', '-o', options, 'start'];
  let pid = 0;
  let disarm: () => void = noop;
  return {
    get pid() {
      return pid;
    },
    async start() {
      await run(user.wrap(join(bin, 'pg_ctl'), pgCtl));
      pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      disarm = onExitKill(pid, 'SIGQUIT');
      if (!(await answers(port))) throw new Error(`PostgreSQL started but does not answer on port ${port}`);
    },
    async halt(signal) {
      disarm();
      await killAndWait(pid, signal);
    },
  };
}

export async function startPostgres(): Promise<PgServer> {
  const bin = findPgBin();
  const user = pgUser();
  // Short path: the socket `<dir>/.s.PGSQL.<port>` must fit in 108 bytes.
  const dir = mkdtempSync(join(tmpdir(), 'pg-'));
  const port = await freePort();
  let pg: PgControl;
  try {
    user.own(dir);
    pg = await pgControl(bin, user, dir, port);
    await pg.start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    host: '127.0.0.1',
    port,
    get pid() {
      return pg.pid;
    },
    dataDir: join(dir, 'data'),
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async restart(o = {}) {
      await pg.halt(o.immediate ? 'SIGQUIT' : 'SIGINT');
      await pg.start();
    },
    async stop() {
      if (processAlive(pg.pid)) await pg.halt('SIGINT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface NatsServer {
  readonly port: number;
  readonly pid: number;
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops the server and removes its scratch directory. */
  stop(): Promise<void>;
}

function natsBin(): string {
  for (const dir of (process.env['PATH'] ?? '').split(':').concat('/usr/sbin', '/usr/local/bin')) {
    if (dir !== '' && existsSync(join(dir, 'nats-server'))) return join(dir, 'nats-server');
  }
  throw new Error(
    'nats-server not found on PATH or in /usr/sbin; install it (Debian: apt-get install nats-server)',
  );
}

/** A JetStream-enabled NATS server; it picks its own free port (`-p -1`) and says which in its log. */
export async function startNats(): Promise<NatsServer> {
  const bin = natsBin();
  const dir = mkdtempSync(join(tmpdir(), 'nats-'));
  const proc = spawn(bin, ['-a', '127.0.0.1', '-p', '-1', '-js', '-sd', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = proc.pid ?? 0;
  const disarm = onExitKill(pid, 'SIGKILL');
  let log = '';
  proc.stdout.on('data', (d: Buffer) => (log += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (log += d.toString()));
  let port = 0;
  for (let i = 0; i < 200 && port === 0; i++) {
    port = Number(/Listening for client connections on 127\.0\.0\.1:(\d+)/.exec(log)?.[1] ?? 0);
    if (proc.exitCode !== null) break;
    if (port === 0) await sleep(25);
  }
  if (port === 0 || !(await answers(port))) {
    disarm();
    await killAndWait(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`nats-server did not start:\n${log}`);
  }
  return {
    port,
    pid,
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      disarm();
      await killAndWait(pid, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
