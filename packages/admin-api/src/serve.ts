/** Serving an HTTP app on a TCP address; the bound address is returned (port 0 picks a free port). */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@agent/log';
import { AdminError } from './errors.js';
import type { Fetchable } from './lazy.js';

export interface ServedApp {
  host: string;
  port: number;
  url: string;
  close(): Promise<void>;
}

/** Parses `host:port` or `[v6]:port`. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^\[([0-9a-fA-F:]+)\]:(\d+)$/.exec(listen) ?? /^([^:\s]+):(\d+)$/.exec(listen);
  if (!m)
    throw Object.assign(new Error(`listen address "${listen}" is not host:port`), {
      code: 'ADMIN_BAD_LISTEN',
    });
  return { host: m[1]!, port: Number(m[2]) };
}

export interface ServeOptions {
  /** The setting the address comes from (`runtime.yaml metrics.listen`), named in a listen error. */
  setting?: string;
  /** Hears a request that failed outside the app (the HTTP adapter failed to load or to answer). */
  logger?: Pick<Logger, 'error'>;
}

/** A listen error that says which setting to change and the likely cause. */
function listenError(
  err: NodeJS.ErrnoException,
  listen: { host: string; port: number },
  setting?: string,
): Error {
  const where = `${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${listen.port}`;
  const from = setting ? ` (${setting})` : '';
  const hint =
    err.code === 'EADDRINUSE'
      ? `the address is already in use; another daemon running? stop it${setting ? `, or change ${setting}` : ''}`
      : err.code === 'EACCES'
        ? `permission denied; use a port above 1023${setting ? ` in ${setting}` : ''}`
        : err.code === 'EADDRNOTAVAIL'
          ? `no such local address${setting ? `; fix ${setting}` : ''}`
          : err.message;
  return Object.assign(new Error(`cannot listen on ${where}${from}: ${hint}`, { cause: err }), {
    code: err.code,
  });
}

type NodeListener = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

/**
 * The app as a Node request listener. The adapter (`@hono/node-server`, which loads Node's fetch
 * implementation for its Request and Response) is imported at the first request: a daemon nobody asks
 * does not carry it.
 */
function lazyListener(app: Fetchable, hostname: string, logger?: Pick<Logger, 'error'>): NodeListener {
  let listener: Promise<NodeListener> | undefined;
  return (req, res) => {
    listener ??= import('@hono/node-server').then((m) =>
      m.getRequestListener((request, env) => app.fetch(request, env), { hostname }),
    );
    return listener
      .then((l) => l(req, res))
      .catch((err: unknown) => {
        // The adapter failed to load (a broken install) or to answer: say so, and end the response rather
        // than hang it.
        logger?.error('http request failed outside the app', {
          method: req.method,
          reason: err instanceof Error ? err.message : String(err),
        });
        if (!res.headersSent) res.statusCode = 500;
        res.end();
      });
  };
}

export function serveApp(
  app: Fetchable,
  listen: { host: string; port: number },
  options: ServeOptions = {},
): Promise<ServedApp> {
  return new Promise((resolveServed, reject) => {
    const listener = lazyListener(app, listen.host, options.logger);
    const server = createServer((req, res) => void listener(req, res));
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, listen, options.setting)));
    server.once('listening', () => {
      const addr = server.address() as AddressInfo;
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolveServed({
        host: addr.address,
        port: addr.port,
        url: `http://${host}:${addr.port}`,
        close: () =>
          new Promise<void>((res) => {
            server.close(() => res());
            server.closeAllConnections();
          }),
      });
    });
    server.listen(listen.port, listen.host);
  });
}

const LOOPBACK_LISTEN = new Set(['127.0.0.1', 'localhost', '::1']);

/**
 * Serves the admin app; refuses (`ADMIN_NOT_LOOPBACK`) any address other than 127.0.0.1, localhost or ::1,
 * since the admin API has no authentication beyond the optional token.
 */
export function serveAdmin(
  app: Fetchable,
  listen: string | { host: string; port: number },
  options: Pick<ServeOptions, 'logger'> = {},
): Promise<ServedApp> {
  const addr = typeof listen === 'string' ? parseListen(listen) : listen;
  const host = addr.host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (!LOOPBACK_LISTEN.has(host))
    return Promise.reject(
      new AdminError(
        'ADMIN_NOT_LOOPBACK',
        `the admin server listens on loopback only; "${addr.host}" is not 127.0.0.1, localhost or ::1 (fix runtime.yaml admin.listen)`,
      ),
    );
  return serveApp(app, { host, port: addr.port }, { ...options, setting: 'runtime.yaml admin.listen' });
}
