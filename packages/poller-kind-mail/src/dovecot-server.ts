/**
 * A real Dovecot IMAP server for tests: a scratch directory, a free loopback port, started in the
 * foreground and stopped by its PID. Needs Debian's `dovecot-imapd` (`.ci/ensure-mail-calendar-servers.sh`);
 * without it `startDovecot` fails with a message that says how to install it (tests fail, never skip).
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freeLoopbackPort, stopByPid, waitForPort } from '@agent/poller-core/testing';

const DOVECOT = '/usr/sbin/dovecot';

export interface DovecotServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly pid: number;
  /** IMAP sessions logged in right now, as the server counts them (`doveadm who`). */
  connections(): Promise<number>;
  stop(): Promise<void>;
}

function config(dir: string, port: number, root: boolean): string {
  const me = userInfo().username;
  return `protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
mail_location = maildir:~/Maildir
first_valid_uid = 1
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/users
}
userdb {
  driver = static
  args = ${root ? 'uid=nobody gid=nogroup ' : ''}home=${dir}/mail/%u
}
${root ? '' : `default_internal_user = ${me}\ndefault_internal_group = ${me}\ndefault_login_user = ${me}\nservice anvil {\n  chroot =\n}\n`}service imap-login {
${root ? '' : '  chroot =\n'}  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service submission-login {
  inet_listener submission {
    port = 0
  }
}
`;
}

/** Starts Dovecot with one user (`alice` / `secret`) on a free loopback port. */
export async function startDovecot(): Promise<DovecotServer> {
  if (!existsSync(DOVECOT))
    throw new Error(
      `${DOVECOT} is missing: install Debian's dovecot-imapd (bash .ci/ensure-mail-calendar-servers.sh)`,
    );
  const root = process.getuid?.() === 0;
  // Short path: Dovecot's unix sockets live under it (108-byte limit).
  const dir = mkdtempSync(join(tmpdir(), 'dc.'));
  chmodSync(dir, 0o755);
  const port = await freeLoopbackPort();
  const conf = join(dir, 'dovecot.conf');
  writeFileSync(conf, config(dir, port, root));
  writeFileSync(join(dir, 'users'), 'alice:{PLAIN}secret\n');
  mkdirSync(join(dir, 'mail'));
  if (root) chownSync(join(dir, 'mail'), 65534, 65534);
  // Its own process group, so that stop() also ends the log/anvil children.
  const child = spawn(DOVECOT, ['-c', conf, '-F'], { stdio: 'ignore', detached: true });
  const pid = child.pid!;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPort(port, exited, () => `dovecot did not start; see ${dir}/dovecot.log`);
  return {
    host: '127.0.0.1',
    port,
    user: 'alice',
    password: 'secret',
    pid,
    async connections() {
      const { stdout } = await promisify(execFile)('doveadm', ['-c', conf, 'who', '-1']);
      return stdout.split('\n').filter((l) => /\bimap\b/.test(l)).length;
    },
    async stop() {
      await stopByPid(pid, exited, true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
