/**
 * A real Dovecot IMAP server for tests: a scratch directory, a free loopback port, started in the
 * foreground and stopped by its PID. Needs Debian's `dovecot-imapd` (`.ci/ensure-mail-calendar-servers.sh`);
 * without it `startDovecot` fails with a message that says how to install it (tests fail, never skip).
 * With `tls`, a CA and a server certificate for 127.0.0.1 and localhost are made with `openssl` in the
 * scratch directory: the plain port offers STARTTLS and a second port speaks implicit TLS. With `oauth2`,
 * XOAUTH2 logins are checked by Dovecot's oauth2 passdb against a loopback RFC 7662 introspection endpoint.
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  freeLoopbackPort,
  startRecordingServer,
  stopByPid,
  waitForPort,
  type RecordedHttpRequest,
} from '@agent/poller-core/testing';
import type { ImapFlow } from 'imapflow';

const DOVECOT = '/usr/sbin/dovecot';
const run = promisify(execFile);

/** The token an introspection request asks about. */
const askedToken = (req: RecordedHttpRequest) => new URLSearchParams(req.body).get('token') ?? '';

export interface DovecotOptions {
  /** A certificate signed by a CA of its own: STARTTLS on `port`, implicit TLS on `tlsPort`. */
  tls?: boolean;
  /** XOAUTH2 logins (the only SASL mechanism besides PLAIN and LOGIN): `oauth2Token` logs in as the user. */
  oauth2?: boolean;
}

export interface DovecotServer {
  readonly host: '127.0.0.1';
  /** Plain IMAP (with STARTTLS when started with `tls`). */
  readonly port: number;
  /** Implicit TLS (IMAPS); only with `tls`. */
  readonly tlsPort?: number;
  /** PEM file of the CA that signed the server certificate; only with `tls`. */
  readonly caFile?: string;
  /** A bearer token the introspection endpoint calls active for `user`; only with `oauth2`. */
  readonly oauth2Token?: string;
  readonly user: string;
  readonly password: string;
  readonly pid: number;
  /** Tokens Dovecot asked the introspection endpoint about, in order; only with `oauth2`. */
  introspected(): string[];
  /** IMAP sessions logged in right now, as the server counts them (`doveadm who`). */
  connections(): Promise<number>;
  /** Runs `doveadm` against this server (e.g. `mailbox update --uid-validity 7 -u alice Box`); its stdout. */
  doveadm(...args: string[]): Promise<string>;
  /**
   * A new IMAP session of `user`, logged in over `port` without TLS: the test's own, to make mailboxes, append
   * mail and read flags. The caller logs out.
   */
  session(): Promise<ImapFlow>;
  stop(): Promise<void>;
}

function config(
  dir: string,
  port: number,
  root: boolean,
  tlsPort: number | undefined,
  introspection: string | undefined,
): string {
  const me = userInfo().username;
  const ssl =
    tlsPort === undefined
      ? 'ssl = no'
      : `ssl = yes\nssl_cert = <${dir}/server.pem\nssl_key = <${dir}/server.key`;
  const oauth2 =
    introspection === undefined
      ? ''
      : `passdb {\n  driver = oauth2\n  mechanisms = xoauth2\n  args = ${dir}/oauth2.conf\n}\n`;
  return `protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
${ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login${introspection === undefined ? '' : ' xoauth2'}
auth_failure_delay = 0
mail_location = maildir:~/Maildir
first_valid_uid = 1
${oauth2}passdb {
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
${tlsPort === undefined ? '    port = 0' : `    address = 127.0.0.1\n    port = ${tlsPort}`}
  }
}
service submission-login {
  inet_listener submission {
    port = 0
  }
}
`;
}

/** A CA and a server certificate for 127.0.0.1 and localhost, signed by it (valid for 2 days). */
async function makeCertificates(dir: string): Promise<void> {
  const openssl = async (args: string) => {
    try {
      await run('openssl', args.split(' '), { cwd: dir });
    } catch (err) {
      throw new Error(`openssl ${args.split(' ')[0]} failed (is openssl installed?)`, { cause: err });
    }
  };
  await openssl(
    'req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=agent-test-CA',
  );
  await openssl('req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await openssl(
    'x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext',
  );
}

/** A loopback RFC 7662 introspection endpoint: `token` is active for `user`, anything else is not. */
async function startIntrospection(token: string, user: string) {
  const server = await startRecordingServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(askedToken(req) === token ? { active: true, username: user } : { active: false }));
  });
  return { ...server, url: `${server.url}/introspect` };
}

/** Starts Dovecot with one user (`alice` / `secret`) on a free loopback port. */
export async function startDovecot(options: DovecotOptions = {}): Promise<DovecotServer> {
  if (!existsSync(DOVECOT))
    throw new Error(
      `${DOVECOT} is missing: install Debian's dovecot-imapd (bash .ci/ensure-mail-calendar-servers.sh)`,
    );
  const root = process.getuid?.() === 0;
  // Short path: Dovecot's unix sockets live under it (108-byte limit).
  const dir = mkdtempSync(join(tmpdir(), 'dc.'));
  chmodSync(dir, 0o755);
  const port = await freeLoopbackPort();
  const tlsPort = options.tls ? await freeLoopbackPort() : undefined;
  if (options.tls) await makeCertificates(dir);
  const oauth2Token = options.oauth2 ? `tok-${Math.random().toString(36).slice(2)}` : undefined;
  const introspection = oauth2Token ? await startIntrospection(oauth2Token, 'alice') : undefined;
  if (introspection)
    writeFileSync(
      join(dir, 'oauth2.conf'),
      `introspection_mode = post\nintrospection_url = ${introspection.url}\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n`,
    );
  const conf = join(dir, 'dovecot.conf');
  writeFileSync(conf, config(dir, port, root, tlsPort, introspection?.url));
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
    ...(tlsPort === undefined ? {} : { tlsPort, caFile: join(dir, 'ca.pem') }),
    ...(oauth2Token === undefined ? {} : { oauth2Token }),
    user: 'alice',
    password: 'secret',
    pid,
    introspected: () => (introspection?.requests ?? []).map(askedToken),
    async connections() {
      const { stdout } = await run('doveadm', ['-c', conf, 'who', '-1']);
      return stdout.split('\n').filter((l) => /\bimap\b/.test(l)).length;
    },
    async doveadm(...args) {
      return (await run('doveadm', ['-c', conf, ...args])).stdout;
    },
    async session() {
      const { ImapFlow } = await import('imapflow');
      const client = new ImapFlow({
        host: '127.0.0.1',
        port,
        secure: false,
        doSTARTTLS: false,
        auth: { user: 'alice', pass: 'secret' },
        logger: false,
      });
      await client.connect();
      return client;
    },
    async stop() {
      await stopByPid(pid, exited, true);
      await introspection?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
