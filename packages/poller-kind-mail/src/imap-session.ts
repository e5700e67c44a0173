/**
 * One IMAP connection per account, shared by that account's jobs and its tool: opened on first use,
 * used by one caller at a time, reopened after a failure, closed after a quiet period and when the shared
 * resource is dropped. The host is checked with the HTTP client's address policy before connecting, and
 * the socket goes to the checked address (no second lookup that DNS rebinding could answer differently).
 */
import { lookup } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { checkAddress, checkHostname } from '@agent/guarded-http';
import { PermanentError, TransientError } from '@agent/poller-core';
import { setTimer, type TimerHandle } from '@agent/timers';
import type { ImapFlow } from 'imapflow';
import type { ImapAccount } from './account.js';
import { imapPollerError } from './imap-errors.js';

/** A connection nobody used for this long is logged out (a removed job leaves no connection behind). */
const IMAP_IDLE_CLOSE_MS = 120_000;
const CONNECT_TIMEOUT_MS = 15_000;

export interface ImapSession {
  /** Runs `fn` with the connection, alone; an abort of `signal` closes the connection. */
  use<T>(signal: AbortSignal, step: string, fn: (client: ImapFlow) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * What an IMAP account block cannot do, found where the config is read (no DNS): `tls: none` with a host
 * that is not written as a loopback address (`localhost`, 127.0.0.0/8, `::1`). The connect checks every
 * resolved address again (`checkedImapAddress`).
 */
export function imapAccountProblem(config: Readonly<Record<string, unknown>>): string | undefined {
  const host = config.host;
  if (config.tls !== 'none' || typeof host !== 'string') return undefined;
  const { category, address } = checkHostname(host);
  if (category === 'loopback' || address === 'localhost') return undefined;
  return `tls: none sends the password in plain text and is only allowed for a loopback host (localhost, 127.0.0.1, ::1), not "${host}"`;
}

/** The address to connect to: every resolved address must pass the policy. */
async function checkedImapAddress(account: ImapAccount, name: string): Promise<string> {
  const policy = { allowPrivateNetworks: account.allowPrivateNetworks };
  const refuse = (why: string) =>
    new PermanentError(
      `mail account "${name}" (imap): host "${account.host}" is refused (${why}); set allow_private_networks: true for a private server`,
    );
  const host = account.host.replace(/^\[(.*)\]$/, '$1');
  const named = checkHostname(account.host, policy);
  if (!named.allowed) throw refuse(named.reason);
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (err) {
      throw new TransientError(`mail account "${name}" (imap): host "${account.host}" did not resolve`, {
        cause: err,
      });
    }
  }
  for (const a of addresses) {
    const v = checkAddress(a, policy);
    if (!v.allowed) throw refuse(`${a}: ${v.reason}`);
    if (account.tls === 'none' && v.category !== 'loopback')
      throw new PermanentError(
        `mail account "${name}" (imap): tls: none is only allowed for a loopback server, and "${account.host}" is ${a}; use tls: implicit or starttls`,
      );
  }
  if (addresses.length === 0) throw refuse('no address');
  return addresses[0]!;
}

/** The CA certificates of `tls_ca_file`, read at every connect (a renewed CA needs no reload). */
async function trustedCa(account: ImapAccount, name: string): Promise<{ ca?: Buffer }> {
  if (account.tlsCaFile === undefined || account.tls === 'none') return {};
  try {
    return { ca: await readFile(account.tlsCaFile) };
  } catch (err) {
    throw new PermanentError(
      `mail account "${name}" (imap): tls_ca_file "${account.tlsCaFile}" cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); fix the path or its permissions`,
      { cause: err },
    );
  }
}

export function createImapSession(account: ImapAccount, name: string): ImapSession {
  let client: ImapFlow | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let idle: TimerHandle | null = null;
  let closed = false;

  const drop = () => {
    const c = client;
    client = null;
    if (c) c.close();
  };

  const open = async (): Promise<ImapFlow> => {
    if (client?.usable) return client;
    drop();
    const address = await checkedImapAddress(account, name);
    const ca = await trustedCa(account, name);
    // Loaded with the first IMAP connection: a daemon without IMAP accounts never loads the client.
    const { ImapFlow } = await import('imapflow');
    const c = new ImapFlow({
      host: address,
      port: account.port,
      secure: account.tls === 'implicit',
      doSTARTTLS: account.tls === 'starttls',
      ...(isIP(account.host.replace(/^\[(.*)\]$/, '$1')) ? {} : { servername: account.host }),
      tls: ca,
      auth:
        'pass' in account.auth
          ? { user: account.user, pass: account.auth.pass }
          : { user: account.user, accessToken: account.auth.accessToken },
      logger: false,
      connectionTimeout: CONNECT_TIMEOUT_MS,
      greetingTimeout: CONNECT_TIMEOUT_MS,
      disableAutoIdle: true,
    });
    // A connection error after connect surfaces on the next command; here it must not crash the process.
    c.on('error', () => {});
    try {
      await c.connect();
    } catch (err) {
      // A refused login or a failed handshake leaves the socket open (the server times it out later).
      c.close();
      throw err;
    }
    client = c;
    return c;
  };

  const run = async <T>(signal: AbortSignal, step: string, fn: (c: ImapFlow) => Promise<T>): Promise<T> => {
    if (closed) throw new TransientError(`mail account "${name}" (imap): the connection was closed`);
    signal.throwIfAborted();
    idle?.cancel();
    signal.addEventListener('abort', drop, { once: true });
    try {
      const c = await open().catch((err: unknown) => {
        throw imapPollerError(err, name, 'connect');
      });
      return await fn(c);
    } catch (err) {
      if (!client?.usable) drop();
      if (signal.aborted) throw signal.reason;
      throw imapPollerError(err, name, step);
    } finally {
      signal.removeEventListener('abort', drop);
      if (!closed) idle = setTimer(drop, IMAP_IDLE_CLOSE_MS, { unref: true });
    }
  };

  return {
    use(signal, step, fn) {
      const p = queue.then(() => run(signal, step, fn));
      queue = p.catch(() => {});
      return p;
    },
    async close() {
      closed = true;
      idle?.cancel();
      drop();
    },
  };
}
