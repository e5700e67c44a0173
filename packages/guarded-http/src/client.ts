/**
 * The guarded HTTP client: one undici `Agent` per address policy, whose connector checks literal
 * addresses and whose `lookup` resolves, checks EVERY answer and hands the checked answers to the
 * socket (pinning). Redirects are followed by hand so each hop goes through the same checks.
 */
import { promises as dns, type LookupOptions } from 'node:dns';
import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import { TextDecoder } from 'node:util';
import { setTimer } from '@agent/timers';
import type * as Undici from 'undici';
import type { Agent, buildConnector, Dispatcher } from 'undici';
import {
  checkAddress,
  checkHostname,
  PRIVATE_CATEGORIES,
  type AddressPolicy,
  type AddressVerdict,
} from './address-policy.js';
import { ACCEPT_ENCODING, DEFAULT_MAX_BODY_BYTES, readBody } from './body.js';
import { GuardedHttpError, safeUrl, type TimeoutPhase } from './errors.js';
import { parseJson, type JsonLimits } from './json.js';
import { parseRetryAfter } from './retry-after.js';

/** Structural logger; `@agent/log`'s `Logger` fits. Messages and fields never carry secrets. */
export interface GuardedHttpLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export interface ResolvedAddress {
  address: string;
  family?: number;
}

/**
 * Resolves a host name to its addresses (all of them). Default: `dns.lookup(host, {all: true})`.
 * Called once per new connection, at connect time.
 */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<string | ResolvedAddress>>;

export interface GuardedHttpOptions {
  /** Name resolution; inject one in tests (e.g. to simulate DNS rebinding). */
  resolver?: Resolver;
  /** Cap on the body, on the wire and after decompression. Default 10 MiB. */
  maxBodyBytes?: number;
  /** Total deadline per request, redirects and body included. Default 30 000 ms. */
  timeoutMs?: number;
  /** TCP/TLS connect timeout (DNS included). Default 10 000 ms. */
  connectTimeoutMs?: number;
  /** Time allowed for response headers once the request is sent. Default 15 000 ms. */
  headersTimeoutMs?: number;
  /** `User-Agent` sent unless the request sets one. Default `agent-daemon (guarded-http)`. */
  userAgent?: string;
  logger?: GuardedHttpLogger;
  /** Clock for `retryAfterMs`. Default `Date.now`. */
  now?: () => number;
  /**
   * TEST SEAM ONLY: exact addresses treated as public (e.g. `127.0.0.2` for a fake "public"
   * server). Never fill this from configuration.
   */
  unsafeAllowAddresses?: readonly string[];
}

export interface GuardedRequestOptions {
  /** GET (default), HEAD, POST, PUT, PATCH, DELETE or OPTIONS. */
  method?: string;
  headers?: Readonly<Record<string, string>>;
  body?: string | Uint8Array;
  /** Caller cancellation; ends the request with `HTTP_ABORTED`. */
  signal?: AbortSignal;
  /** Lift the refusal of loopback, RFC 1918, unique-local, CGNAT and localhost for this request. */
  allowPrivateNetworks?: boolean;
  maxBodyBytes?: number;
  timeoutMs?: number;
  headersTimeoutMs?: number;
  /** Follow up to 5 redirects (default true). With false, a 3xx is returned as the response. */
  followRedirects?: boolean;
}

export interface RedirectHop {
  status: number;
  /** The URL the hop led to. */
  url: string;
}

export interface GuardedResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** Decoded body (Content-Encoding removed when it was gzip, deflate or br). Empty for HEAD. */
  body: Buffer;
  /** Final URL after redirects. */
  url: string;
  redirects: RedirectHop[];
  /** `Retry-After` in ms from now, unclamped; undefined when absent or malformed. */
  retryAfterMs: number | undefined;
  /** Body decoded with the Content-Type charset (UTF-8 when absent or unknown). */
  text(): string;
  /** `JSON.parse(text())` with a depth cap (default 64); throws `HTTP_INVALID_JSON` or `HTTP_JSON_TOO_DEEP`. */
  json<T = unknown>(limits?: JsonLimits): T;
}

export interface GuardedHttp {
  request(url: string | URL, options?: GuardedRequestOptions): Promise<GuardedResponse>;
  /** Closes pooled connections; later requests fail with `HTTP_CLOSED`. */
  close(): Promise<void>;
}

export const MAX_REDIRECTS = 5;
let undici: Promise<typeof Undici> | undefined;
/** undici is loaded by the first request: a daemon that makes none never holds its code and objects. */
const loadUndici = (): Promise<typeof Undici> => (undici ??= import('undici'));

const DEFAULTS = {
  timeoutMs: 30_000,
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 15_000,
  userAgent: 'agent-daemon (guarded-http)',
};
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'REPORT']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Headers the client owns; a caller setting them would desync the framing or the pinning.
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-connection',
]);
// The only request headers carried across a cross-origin redirect. Authorization, Cookie,
// Proxy-Authorization, validators and every custom header (API keys) are dropped.
const CROSS_ORIGIN_SAFE = new Set(['accept', 'accept-language', 'accept-encoding', 'user-agent']);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const silent: GuardedHttpLogger = { debug() {}, info() {}, warn() {} };

/**
 * A request's own abort, as undici takes a `signal`: an EventEmitter that emits `abort`, with `aborted` and
 * `reason`. Not an AbortController: on Node 20 every AbortSignal outlives the young-generation collections
 * and waits for a full one, which at thousands of requests a minute grows the old generation steadily.
 */
class RequestAbort extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

function ssrfError(host: string, verdict: AddressVerdict, url?: string): GuardedHttpError {
  const hint = PRIVATE_CATEGORIES.has(verdict.category)
    ? 'Set allowPrivateNetworks (allow_private_networks: true) only if this private target is intended.'
    : 'This range is never allowed.';
  const shown = verdict.address === host ? host : `${host} (${verdict.address})`;
  return new GuardedHttpError(
    'HTTP_SSRF_BLOCKED',
    `Refused to connect to ${shown}: ${verdict.reason}. ${hint}`,
    url === undefined ? { host, category: verdict.category } : { host, category: verdict.category, url },
  );
}

function parseTarget(input: string | URL, base?: URL): URL {
  let url: URL;
  try {
    url = base === undefined ? new URL(String(input)) : new URL(String(input), base);
  } catch (cause) {
    throw new GuardedHttpError('HTTP_BAD_URL', 'Invalid URL; give an absolute http:// or https:// URL.', {
      cause,
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new GuardedHttpError(
      'HTTP_BAD_SCHEME',
      `Scheme ${url.protocol} is not allowed${base ? ' (in a redirect)' : ''}; only http: and https: are.`,
      { url: `${url.protocol}//${url.host}` },
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new GuardedHttpError(
      'HTTP_BAD_URL',
      `URL ${safeUrl(url)} contains credentials${base ? ' (in a redirect)' : ''}; send them in a header (e.g. Authorization) instead.`,
      { url: safeUrl(url), host: url.hostname },
    );
  }
  if (url.hostname === '')
    throw new GuardedHttpError('HTTP_BAD_URL', 'URL has no host.', { url: safeUrl(url) });
  return url;
}

function normaliseHeaders(input: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (input == null) return out;
  for (const [name, value] of Object.entries(input)) {
    const key = name.toLowerCase();
    if (!TOKEN.test(name)) {
      throw new GuardedHttpError(
        'HTTP_INVALID_REQUEST',
        `Invalid request header name ${JSON.stringify(name)}.`,
      );
    }
    if (RESERVED_HEADERS.has(key)) {
      throw new GuardedHttpError(
        'HTTP_INVALID_REQUEST',
        `Request header ${key} is set by the client; remove it.`,
      );
    }
    if (typeof value !== 'string' || /[\r\n\0]/.test(value)) {
      // The value is never echoed: it may be a token.
      throw new GuardedHttpError(
        'HTTP_INVALID_REQUEST',
        `Request header ${key} has an invalid value (not a string, or contains CR/LF/NUL).`,
      );
    }
    out[key] = value;
  }
  return out;
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function charsetOf(contentType: string | undefined): string {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return m?.[1] ?? 'utf-8';
}

function decodeText(body: Buffer, contentType: string | undefined): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charsetOf(contentType));
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return decoder.decode(body);
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function findGuarded(err: unknown): GuardedHttpError | undefined {
  for (
    let e: unknown = err, depth = 0;
    e != null && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    if (e instanceof GuardedHttpError) return e;
  }
  return undefined;
}

interface RequestState {
  deadlineFired: boolean;
  callerAborted: boolean;
  closed: boolean;
  method: string;
  url: URL;
  timeoutMs: number;
}

function mapError(err: unknown, st: RequestState): GuardedHttpError {
  const url = safeUrl(st.url);
  const host = st.url.hostname;
  const timeout = (phase: TimeoutPhase, ms?: number): GuardedHttpError =>
    new GuardedHttpError(
      'HTTP_TIMEOUT',
      `${st.method} ${url} timed out (${phase}${ms === undefined ? '' : ` after ${ms} ms`}); the server is slow or unreachable, try again later.`,
      { url, host, phase, cause: err },
    );
  const guarded = findGuarded(err);
  // A refusal or a cap is the real reason even if the deadline fired meanwhile.
  if (guarded !== undefined && guarded.code !== 'HTTP_NETWORK') {
    if (guarded.url !== undefined) return guarded;
    return new GuardedHttpError(guarded.code, guarded.message, {
      url,
      host: guarded.host ?? host,
      ...(guarded.category === undefined ? {} : { category: guarded.category }),
      ...(guarded.phase === undefined ? {} : { phase: guarded.phase }),
      ...(guarded.limitBytes === undefined ? {} : { limitBytes: guarded.limitBytes }),
      cause: guarded.cause,
    });
  }
  if (st.deadlineFired) return timeout('deadline', st.timeoutMs);
  if (st.callerAborted) {
    return new GuardedHttpError('HTTP_ABORTED', `${st.method} ${url} was cancelled by the caller.`, {
      url,
      host,
      cause: err,
    });
  }
  if (st.closed) {
    return new GuardedHttpError('HTTP_CLOSED', 'The HTTP client is closed; create a new one.', {
      url,
      cause: err,
    });
  }
  const code = errorCode(err);
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return timeout('connect');
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return timeout('headers');
  if (code === 'UND_ERR_BODY_TIMEOUT') return timeout('body');
  if (code === 'UND_ERR_DESTROYED' || code === 'UND_ERR_CLOSED') {
    return new GuardedHttpError('HTTP_CLOSED', 'The HTTP client is closed; create a new one.', {
      url,
      cause: err,
    });
  }
  if (
    code !== undefined &&
    (code.startsWith('Z_') || code.startsWith('ERR_BROTLI') || code === 'ERR__ERROR_FORMAT_PADDING_1')
  ) {
    return new GuardedHttpError(
      'HTTP_BAD_ENCODING',
      `${st.method} ${url}: the compressed body is corrupt (${code}).`,
      { url, host, causeCode: code, cause: err },
    );
  }
  const detail = code ?? (err instanceof Error ? err.name : 'unknown error');
  return new GuardedHttpError(
    'HTTP_NETWORK',
    `${st.method} ${url} failed: network error (${detail}); check the host name and that the server is reachable.`,
    { url, host, causeCode: detail, cause: err },
  );
}

function toAddressList(
  answers: ReadonlyArray<string | ResolvedAddress>,
): { address: string; family: number }[] {
  const out: { address: string; family: number }[] = [];
  for (const a of answers) {
    const address = typeof a === 'string' ? a : a?.address;
    const family = typeof address === 'string' ? isIP(address) : 0;
    // An answer that is not an address at all is treated like a refused one, not skipped.
    out.push({ address: String(address), family });
  }
  return out;
}

const defaultResolver: Resolver = async (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

export function createGuardedHttp(options: GuardedHttpOptions = {}): GuardedHttp {
  const resolver = options.resolver ?? defaultResolver;
  const logger = options.logger ?? silent;
  const now = options.now ?? Date.now;
  const defaultMaxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const defaultTimeout = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const connectTimeout = options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
  const defaultHeadersTimeout = options.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs;
  const userAgent = options.userAgent ?? DEFAULTS.userAgent;
  const unsafe = options.unsafeAllowAddresses ?? [];
  const agents = new Map<boolean, Agent>();
  let closed = false;

  function refuse(host: string, verdict: AddressVerdict, url?: string): GuardedHttpError {
    logger.warn('ssrf guard refused', { host, address: verdict.address, category: verdict.category });
    return ssrfError(host, verdict, url);
  }

  function agentFor(u: typeof Undici, allowPrivateNetworks: boolean): Agent {
    let agent = agents.get(allowPrivateNetworks);
    if (agent !== undefined) return agent;
    const policy: AddressPolicy = { allowPrivateNetworks, unsafeAllowAddresses: unsafe };

    // Runs inside net.connect: the socket connects to exactly the addresses returned here.
    const lookup = (
      hostname: string,
      opts: LookupOptions,
      callback: (
        err: Error | null,
        address: string | { address: string; family: number }[],
        family?: number,
      ) => void,
    ): void => {
      const nameVerdict = checkHostname(hostname, policy);
      if (!nameVerdict.allowed) {
        callback(refuse(hostname, nameVerdict), '');
        return;
      }
      resolver(hostname).then(
        (answers) => {
          const list = toAddressList(answers);
          if (list.length === 0) {
            const err = Object.assign(new Error(`No address found for ${hostname}`), { code: 'ENOTFOUND' });
            callback(err, '');
            return;
          }
          // One refused answer refuses the name: the OS could pick any of them.
          for (const entry of list) {
            const verdict = checkAddress(entry.address, policy);
            if (!verdict.allowed) {
              callback(refuse(hostname, verdict), '');
              return;
            }
          }
          const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : (opts.family ?? 0);
          const wanted = family === 4 || family === 6 ? list.filter((e) => e.family === family) : list;
          if (wanted.length === 0) {
            callback(
              Object.assign(new Error(`No IPv${family} address for ${hostname}`), { code: 'ENOTFOUND' }),
              '',
            );
            return;
          }
          logger.debug('resolved and pinned', { host: hostname, addresses: wanted.map((e) => e.address) });
          if (opts.all === true) callback(null, wanted);
          else callback(null, wanted[0]!.address, wanted[0]!.family);
        },
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), ''),
      );
    };

    const base = u.buildConnector({ timeout: connectTimeout, lookup: lookup as never });
    // Literal addresses never reach `lookup`, so check them here too (the request path checks
    // them before sending; this covers anything that reaches the agent another way).
    const connect: buildConnector.connector = (opts, callback) => {
      if (isIP(opts.hostname) !== 0) {
        const verdict = checkAddress(opts.hostname, policy);
        if (!verdict.allowed) {
          const err = refuse(opts.hostname, verdict);
          queueMicrotask(() => callback(err, null));
          return;
        }
      }
      base(opts, callback);
    };
    agent = new u.Agent({ connect, headersTimeout: defaultHeadersTimeout });
    agents.set(allowPrivateNetworks, agent);
    return agent;
  }

  async function request(input: string | URL, opts: GuardedRequestOptions = {}): Promise<GuardedResponse> {
    const method = (opts.method ?? 'GET').toUpperCase();
    if (closed) throw new GuardedHttpError('HTTP_CLOSED', 'The HTTP client is closed; create a new one.');
    // The target is parsed once: no placeholder URL per request.
    const st: RequestState = {
      deadlineFired: false,
      callerAborted: false,
      closed,
      method,
      url: parseTarget(input),
      timeoutMs: opts.timeoutMs ?? defaultTimeout,
    };
    if (!METHODS.has(method)) {
      throw new GuardedHttpError(
        'HTTP_INVALID_REQUEST',
        `Method ${JSON.stringify(opts.method)} is not supported.`,
      );
    }
    let headers = normaliseHeaders(opts.headers);
    headers['user-agent'] ??= userAgent;
    headers['accept-encoding'] ??= ACCEPT_ENCODING;
    let body: string | Uint8Array | undefined = opts.body;
    if (body !== undefined && (method === 'GET' || method === 'HEAD')) {
      throw new GuardedHttpError('HTTP_INVALID_REQUEST', `A ${method} request cannot have a body.`);
    }
    const allowPrivate = opts.allowPrivateNetworks === true;
    const maxBodyBytes = opts.maxBodyBytes ?? defaultMaxBody;
    const headersTimeout = opts.headersTimeoutMs ?? defaultHeadersTimeout;
    const follow = opts.followRedirects !== false;
    const policy: AddressPolicy = { allowPrivateNetworks: allowPrivate, unsafeAllowAddresses: unsafe };

    const controller = new RequestAbort();
    const onCallerAbort = (): void => {
      st.callerAborted = true;
      controller.abort(opts.signal?.reason);
    };
    if (opts.signal?.aborted) onCallerAbort();
    opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const timer = setTimer(() => {
      st.deadlineFired = true;
      controller.abort(new Error('deadline'));
    }, st.timeoutMs);
    const started = Date.now();
    const redirects: RedirectHop[] = [];
    let currentMethod = method;

    try {
      const u = await loadUndici();
      for (;;) {
        if (controller.aborted) throw controller.reason;
        const verdict = checkHostname(st.url.hostname, policy);
        if (!verdict.allowed) throw refuse(st.url.hostname, verdict, safeUrl(st.url));

        const res = await u.request(st.url, {
          dispatcher: agentFor(u, allowPrivate),
          method: currentMethod as Dispatcher.HttpMethod,
          headers,
          body: body ?? null,
          signal: controller,
          headersTimeout,
          bodyTimeout: st.timeoutMs,
        });
        const resHeaders = flattenHeaders(res.headers);
        const location = resHeaders['location'];

        if (follow && REDIRECT_STATUSES.has(res.statusCode) && location !== undefined) {
          await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
          if (redirects.length >= MAX_REDIRECTS) {
            throw new GuardedHttpError(
              'HTTP_TOO_MANY_REDIRECTS',
              `${method} ${safeUrl(st.url)}: more than ${MAX_REDIRECTS} redirects; point the job at the final URL.`,
              { url: safeUrl(st.url), host: st.url.hostname },
            );
          }
          const next = parseTarget(location, st.url);
          const crossOrigin = next.origin !== st.url.origin;
          if (
            res.statusCode === 303 ||
            ((res.statusCode === 301 || res.statusCode === 302) && currentMethod === 'POST')
          ) {
            if (currentMethod !== 'HEAD') currentMethod = 'GET';
            body = undefined;
            delete headers['content-type'];
          }
          // 307/308 (and 301/302 after a method other than POST) keep the method and so the body, which may
          // carry a secret as surely as a header: it is never sent to another origin.
          if (crossOrigin && body !== undefined && body.length > 0) {
            throw new GuardedHttpError(
              'HTTP_REDIRECT_REFUSED',
              `${method} ${safeUrl(st.url)}: the server redirects (${res.statusCode}) to another origin, ${next.origin}, and the request body would go there too; it is not followed. Point the job at the final URL if that origin is trusted.`,
              { url: safeUrl(st.url), host: st.url.hostname },
            );
          }
          if (crossOrigin) {
            const kept: Record<string, string> = {};
            for (const [k, v] of Object.entries(headers)) {
              if (CROSS_ORIGIN_SAFE.has(k) || (k === 'content-type' && body !== undefined)) kept[k] = v;
            }
            headers = kept;
          }
          logger.debug('redirect followed', {
            status: res.statusCode,
            from: safeUrl(st.url),
            to: safeUrl(next),
            crossOrigin,
          });
          redirects.push({ status: res.statusCode, url: next.href });
          st.url = next;
          continue;
        }

        const finalUrl = st.url;
        const noBody = currentMethod === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
        let buf: Buffer;
        if (noBody) {
          await res.body.dump().catch(() => {});
          buf = Buffer.alloc(0);
        } else {
          ({ body: buf } = await readBody(res.body, {
            maxBytes: maxBodyBytes,
            contentEncoding: resHeaders['content-encoding'],
            contentLength: resHeaders['content-length'],
            url: safeUrl(finalUrl),
          }));
        }
        logger.debug('http request done', {
          method,
          url: safeUrl(finalUrl),
          status: res.statusCode,
          bytes: buf.length,
          ms: Date.now() - started,
        });
        const contentType = resHeaders['content-type'];
        const status = res.statusCode;
        return {
          status,
          headers: resHeaders,
          body: buf,
          url: finalUrl.href,
          redirects,
          retryAfterMs: parseRetryAfter(resHeaders['retry-after'], now()),
          text: () => decodeText(buf, contentType),
          json: <T>(limits?: JsonLimits): T => {
            try {
              return parseJson(decodeText(buf, contentType), limits) as T;
            } catch (cause) {
              const deep = (cause as GuardedHttpError).code === 'HTTP_JSON_TOO_DEEP';
              throw new GuardedHttpError(
                deep ? 'HTTP_JSON_TOO_DEEP' : 'HTTP_INVALID_JSON',
                deep
                  ? `Response from ${safeUrl(finalUrl)} (status ${status}): ${(cause as Error).message}.`
                  : `Response from ${safeUrl(finalUrl)} (status ${status}) is not valid JSON.`,
                { url: safeUrl(finalUrl), host: finalUrl.hostname, cause },
              );
            }
          },
        };
      }
    } catch (err) {
      st.closed = closed;
      throw mapError(err, st);
    } finally {
      timer.cancel();
      opts.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  async function close(): Promise<void> {
    closed = true;
    const all = [...agents.values()];
    agents.clear();
    await Promise.all(all.map((a) => a.close()));
  }

  return { request, close };
}
