/**
 * The CLI side of the admin API: where the daemon is (`--admin-url`, `AGENT_ADMIN_URL`, or `runtime.yaml`
 * `admin.listen`), its optional token file, and JSON requests with short timeouts.
 */
import { readFileSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { resolve } from 'node:path';
import { formatIssue, loadClientConfig } from '@agent/config-snapshot/client';
import { timeoutSignal } from '@agent/timers';
import { ADMIN_URL_ENV } from './admin-options.js';

export { ADMIN_URL_ENV };
/** Connecting to a loopback port either works at once or not at all. */
export const CONNECT_TIMEOUT_MS = 2000;
export const REQUEST_TIMEOUT_MS = 10_000;
/** A manual tick answers when it is over; the daemon bounds a tick well below this. */
export const RUN_TIMEOUT_MS = 180_000;

/** What one code means and what the operator does about it. */
export interface CliErrorInfo {
  readonly meaning: string;
  readonly action: string;
}

export const CLI_ERROR_CODES = {
  CLI_DAEMON_DOWN: {
    meaning:
      'Nothing answers at the admin URL: `agent pollers: the daemon is not running (no admin server at <url>)`.',
    action: 'Start the daemon, or point `--admin-url` / `AGENT_ADMIN_URL` at it.',
  },
  CLI_TIMEOUT: {
    meaning: 'Connected, but no answer within 10 s (180 s for `run` and `reload`).',
    action: 'Look at the daemon log.',
  },
  CLI_ADMIN_ERROR: {
    meaning: 'The admin API answered with an error; its message is printed.',
    action: 'Follow the printed message (e.g. for an unknown job: `agent pollers list`).',
  },
  CLI_BAD_ANSWER: {
    meaning: 'The answer is not JSON: something else listens there.',
    action: 'Check the URL.',
  },
  CLI_CONFIG: {
    meaning: '`runtime.yaml` cannot be read, or `admin.listen` is not `host:port`.',
    action: 'Fix the file or pass `--admin-url`.',
  },
  CLI_TOKEN_FILE: {
    meaning: '`admin.token_file` is missing, empty, or readable by group or others.',
    action: '`chmod 600 <file>`, and check that it holds the token.',
  },
  CLI_BAD_URL: {
    meaning: '`--admin-url` / `AGENT_ADMIN_URL` is not an http URL.',
    action: 'Use `http://127.0.0.1:9091`.',
  },
} as const satisfies Record<string, CliErrorInfo>;

export type CliErrorCode = keyof typeof CLI_ERROR_CODES;

export class CliError extends Error {
  readonly code: CliErrorCode;
  /** HTTP status of an admin error answer. */
  readonly status: number | undefined;
  /** Error code of the admin API (`ADMIN_UNKNOWN_JOB`, ...). */
  readonly apiCode: string | undefined;
  constructor(code: CliErrorCode, message: string, extra: { status?: number; apiCode?: string } = {}) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    this.status = extra.status;
    this.apiCode = extra.apiCode;
  }
}

export interface AdminTarget {
  url: string;
  token: string | null;
  /** Where the URL came from, for messages. */
  from: 'flag' | 'env' | 'config';
}

/** `host:port` / `[v6]:port` of `admin.listen` as an http URL. */
export function listenToUrl(listen: string): string {
  const m = /^\[([0-9a-fA-F:]+)\]:(\d+)$/.exec(listen) ?? /^([^:\s]+):(\d+)$/.exec(listen);
  if (!m) throw new CliError('CLI_CONFIG', `runtime.yaml admin.listen "${listen}" is not host:port`);
  const host = m[1]!.includes(':') ? `[${m[1]}]` : m[1]!;
  return `http://${host}:${m[2]}`;
}

function normaliseUrl(raw: string, from: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CliError('CLI_BAD_URL', `${from} "${raw}" is not a URL such as http://127.0.0.1:9091`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new CliError('CLI_BAD_URL', `${from} "${raw}" must start with http://`);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

/** Reads the token file; like `${file:}` secrets it must not be readable by group or others. */
export function readTokenFile(path: string): string {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    throw new CliError(
      'CLI_TOKEN_FILE',
      `cannot read admin.token_file ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  if ((mode & 0o077) !== 0)
    throw new CliError(
      'CLI_TOKEN_FILE',
      `admin.token_file ${path} has mode ${(mode & 0o777).toString(8).padStart(4, '0')}; run chmod 600 ${path}`,
    );
  const token = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  if (token.trim() === '') throw new CliError('CLI_TOKEN_FILE', `admin.token_file ${path} is empty`);
  return token;
}

/**
 * The admin URL: `--admin-url`, else `AGENT_ADMIN_URL`, else `admin.listen` of `<configDir>/runtime.yaml`.
 * The token comes from `admin.token_file` of that runtime.yaml when it names one (relative to `cwd`).
 */
export function resolveAdminTarget(opts: {
  adminUrl?: string | undefined;
  configDir: string;
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
}): AdminTarget {
  const flag = opts.adminUrl?.trim();
  const envUrl = opts.env[ADMIN_URL_ENV]?.trim();
  const configDir = resolve(opts.cwd, opts.configDir);
  const { config, errors } = loadClientConfig(configDir, { cwd: opts.cwd, env: opts.env });
  let url: string;
  let from: AdminTarget['from'];
  if (flag) [url, from] = [normaliseUrl(flag, '--admin-url'), 'flag'];
  else if (envUrl) [url, from] = [normaliseUrl(envUrl, ADMIN_URL_ENV), 'env'];
  else {
    if (!config)
      throw new CliError(
        'CLI_CONFIG',
        `cannot find the admin server: ${errors.map(formatIssue).join('; ')} (or pass --admin-url)`,
      );
    [url, from] = [listenToUrl(config.runtime.admin.listen), 'config'];
  }
  const tokenFile = config?.runtime.admin.token_file;
  const token = tokenFile ? readTokenFile(resolve(opts.cwd, tokenFile)) : null;
  return { url, token, from };
}

const NOT_RUNNING = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ECONNRESET',
]);

function errCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const c = e?.code ?? e?.cause?.code;
  return typeof c === 'string' ? c : undefined;
}

export function daemonDownMessage(url: string): string {
  return `the daemon is not running (no admin server at ${url})`;
}

/** Kept for callers that close the client before exiting; an idle keep-alive socket never holds the process. */
export async function closeAdminClient(): Promise<void> {}

interface Answer {
  status: number;
  text: string;
}

/**
 * One request with `node:http` (`node:https` only for an https URL). Not the built-in fetch: loading its HTTP
 * stack costs a client command more than the whole request, and its process lingers after the answer.
 */
async function send(
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
): Promise<Answer> {
  const request = url.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  return new Promise<Answer>((resolveAnswer, reject) => {
    const req = request(url, { method: init.method, headers: init.headers, signal: init.signal }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, text }));
      res.on('close', () => {
        if (!res.complete) reject(new Error('the connection closed before the answer was complete'));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** One JSON request. Throws `CliError`: daemon down, timeout, an admin error answer, or a non-JSON answer. */
export async function adminRequest<T>(
  target: AdminTarget,
  method: 'GET' | 'POST',
  path: string,
  opts: { body?: unknown; timeoutMs?: number } = {},
): Promise<T> {
  const timeout = opts.timeoutMs ?? REQUEST_TIMEOUT_MS;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (target.token) headers.authorization = `Bearer ${target.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  let res: Answer;
  const deadline = timeoutSignal(timeout, { unref: true });
  try {
    res = await send(new URL(`${target.url}${path}`), {
      method,
      headers,
      signal: deadline.signal,
      ...(body !== undefined ? { body } : {}),
    });
  } catch (err) {
    if (deadline.signal.aborted)
      throw new CliError(
        'CLI_TIMEOUT',
        `the daemon did not answer within ${timeout / 1000} s (${target.url})`,
      );
    const code = errCode(err);
    if (code && NOT_RUNNING.has(code)) throw new CliError('CLI_DAEMON_DOWN', daemonDownMessage(target.url));
    throw new CliError('CLI_DAEMON_DOWN', `${daemonDownMessage(target.url)}: ${(err as Error).message}`);
  } finally {
    deadline.cancel();
  }
  let json: unknown;
  try {
    json = JSON.parse(res.text);
  } catch {
    throw new CliError(
      'CLI_BAD_ANSWER',
      `unexpected answer from ${target.url}${path} (HTTP ${res.status}); is this the agent admin server?`,
      { status: res.status },
    );
  }
  if (res.status >= 400) {
    const e = (json as { error?: { code?: unknown; message?: unknown } }).error;
    const message = typeof e?.message === 'string' ? e.message : `HTTP ${res.status}`;
    throw new CliError('CLI_ADMIN_ERROR', message, {
      status: res.status,
      ...(typeof e?.code === 'string' ? { apiCode: e.code } : {}),
    });
  }
  return json as T;
}
