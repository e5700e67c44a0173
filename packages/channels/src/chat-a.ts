import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@agent/log';
import { setTimer } from '@agent/timers';
import type {
  ChannelDeps,
  ChannelInstance,
  ChannelPlugin,
  InboundMessage,
  JsonSchema,
  SendResult,
} from './contract.js';
import { ChannelError, ChannelSendError, isRetryableStatus } from './errors.js';
import {
  checkConfigObject,
  checkOutbound,
  depsClock,
  describeNetworkError,
  isRecord,
  MAX_RESPONSE_BYTES,
  optionalString,
  parseJson,
  readCapped,
  redact,
  requireString,
  stripTrailingSlash,
  vendorRequest,
} from './internal.js';
import { splitText } from './split-text.js';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

const PLUGIN = 'chat_a';

/** One `chat_a` instance block (WhatsApp Cloud API). */
export interface ChatAConfig {
  /** API origin; default `https://graph.facebook.com`. */
  base_url?: string;
  /** Graph API version path segment; default `v21.0`. */
  api_version?: string;
  phone_number_id: string;
  access_token: string;
  /** Signs inbound webhook bodies (`X-Hub-Signature-256`). */
  app_secret: string;
  /** Echoed back by the GET verification handshake. */
  verify_token: string;
  /** `host:port` of the webhook listener; default `127.0.0.1:8081`; port 0 picks a free port. */
  listen?: string;
  /** Webhook path; default `/webhook`. */
  path?: string;
}

export const CHAT_A_DEFAULTS = {
  base_url: 'https://graph.facebook.com',
  api_version: 'v21.0',
  listen: '127.0.0.1:8081',
  path: '/webhook',
} as const;

/** Webhook bodies larger than this are refused with 413. */
export const MAX_WEBHOOK_BODY_BYTES = 1024 * 1024;

export const chatAInstanceSchema: JsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'chat_a instance',
  type: 'object',
  additionalProperties: false,
  required: ['phone_number_id', 'access_token', 'app_secret', 'verify_token'],
  properties: {
    base_url: { type: 'string', pattern: '^https?://', default: CHAT_A_DEFAULTS.base_url },
    api_version: { type: 'string', pattern: '^v[0-9]+\\.[0-9]+$', default: CHAT_A_DEFAULTS.api_version },
    phone_number_id: { type: 'string', minLength: 1 },
    access_token: { type: 'string', minLength: 1 },
    app_secret: { type: 'string', minLength: 1 },
    verify_token: { type: 'string', minLength: 1 },
    listen: {
      type: 'string',
      pattern: '^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):[0-9]{1,5}$',
      default: CHAT_A_DEFAULTS.listen,
    },
    path: { type: 'string', pattern: '^/', default: CHAT_A_DEFAULTS.path },
  },
};

const KNOWN_FIELDS = Object.keys(chatAInstanceSchema.properties as object);

interface ResolvedChatAConfig {
  baseUrl: string;
  apiVersion: string;
  phoneNumberId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
  listen: ListenAddress;
  path: string;
}

export interface ListenAddress {
  host: string;
  port: number;
}

/** Parses `host:port` (IPv6 hosts in brackets: `[::1]:8081`). */
export function parseListenAddress(value: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):([0-9]{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new ChannelError(
      'CHANNEL_CONFIG_INVALID',
      `${PLUGIN}: \`listen\` must be host:port with a port from 0 to 65535 (got "${value}")`,
    );
  }
  return { host: (m[1] ?? m[2]) as string, port };
}

function resolveConfig(config: unknown): ResolvedChatAConfig {
  const c = checkConfigObject(PLUGIN, config, KNOWN_FIELDS);
  const path = optionalString(PLUGIN, c, 'path', CHAT_A_DEFAULTS.path);
  if (!path.startsWith('/')) {
    throw new ChannelError('CHANNEL_CONFIG_INVALID', `${PLUGIN}: \`path\` must start with "/"`);
  }
  return {
    baseUrl: stripTrailingSlash(optionalString(PLUGIN, c, 'base_url', CHAT_A_DEFAULTS.base_url)),
    apiVersion: optionalString(PLUGIN, c, 'api_version', CHAT_A_DEFAULTS.api_version),
    phoneNumberId: requireString(PLUGIN, c, 'phone_number_id'),
    accessToken: requireString(PLUGIN, c, 'access_token'),
    appSecret: requireString(PLUGIN, c, 'app_secret'),
    verifyToken: requireString(PLUGIN, c, 'verify_token'),
    listen: parseListenAddress(optionalString(PLUGIN, c, 'listen', CHAT_A_DEFAULTS.listen)),
    path,
  };
}

/** A running `chat_a` instance; `address` is the bound webhook listener once `start` resolved. */
export interface ChatAInstance extends ChannelInstance<ChatAConfig> {
  readonly address: ListenAddress | undefined;
  /** Swaps tokens, secret and API coordinates; `listen` and `path` changes need a new instance. */
  updateCredentials(config: ChatAConfig): void;
}

/** Hex HMAC-SHA256 signature header value Meta sends with each webhook body. */
export function signWebhookBody(body: string | Buffer, appSecret: string): string {
  return 'sha256=' + createHmac('sha256', appSecret).update(body).digest('hex');
}

function signatureMatches(header: string | string[] | undefined, body: Buffer, appSecret: string): boolean {
  if (typeof header !== 'string') return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return false;
  const given = Buffer.from(m[1] as string, 'hex');
  const expected = createHmac('sha256', appSecret).update(body).digest();
  return timingSafeEqual(given, expected);
}

function secretEquals(given: string, expected: string): boolean {
  // Hash first so the comparison takes the same time whatever the lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

interface WebhookTextMessage {
  from: string;
  id: string;
  text: string;
  phoneNumberId: string | undefined;
}

/** Text messages in a webhook payload (`entry[].changes[].value.messages[]`); everything else is skipped. */
function extractTextMessages(payload: unknown): { messages: WebhookTextMessage[]; skipped: number } {
  const messages: WebhookTextMessage[] = [];
  let skipped = 0;
  const entries = isRecord(payload) && Array.isArray(payload.entry) ? payload.entry : [];
  for (const entry of entries) {
    const changes = isRecord(entry) && Array.isArray(entry.changes) ? entry.changes : [];
    for (const change of changes) {
      const value = isRecord(change) && isRecord(change.value) ? change.value : undefined;
      if (!value || !Array.isArray(value.messages)) continue; // e.g. statuses only
      const metadata = isRecord(value.metadata) ? value.metadata : {};
      const phoneNumberId =
        typeof metadata.phone_number_id === 'string' ? metadata.phone_number_id : undefined;
      for (const m of value.messages) {
        const body = isRecord(m) && isRecord(m.text) ? m.text.body : undefined;
        if (
          isRecord(m) &&
          m.type === 'text' &&
          typeof m.from === 'string' &&
          typeof m.id === 'string' &&
          typeof body === 'string'
        ) {
          messages.push({ from: m.from, id: m.id, text: body, phoneNumberId });
        } else {
          skipped++;
        }
      }
    }
  }
  return { messages, skipped };
}

type BodyResult = { kind: 'ok'; body: Buffer } | { kind: 'too_large' } | { kind: 'aborted' };

function readRequestBody(req: IncomingMessage, cap: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > cap) {
      resolve({ kind: 'too_large' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (r: BodyResult): void => {
      if (!settled) {
        settled = true;
        resolve(r);
      }
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > cap) settle({ kind: 'too_large' });
      else chunks.push(chunk);
    });
    req.on('end', () => settle({ kind: 'ok', body: Buffer.concat(chunks) }));
    req.on('error', () => settle({ kind: 'aborted' }));
    req.on('close', () => settle({ kind: 'aborted' }));
  });
}

function reply(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...extra });
  res.end(text);
}

const SEEN_LIMIT = 1000;

class ChatAChannelInstance implements ChatAInstance {
  private config: ResolvedChatAConfig;
  private server: Server | undefined;
  private bound: ListenAddress | undefined;
  private readonly log: Logger;
  private readonly clock: ReturnType<typeof depsClock>;
  // Meta re-delivers a webhook until it gets a 200: remember recent ids so a retry after a
  // partial failure does not hand the already-accepted messages over twice.
  private readonly seen = new Set<string>();
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly instance: string,
    config: ChatAConfig,
    private readonly deps: ChannelDeps,
  ) {
    this.config = resolveConfig(config);
    this.log = deps.logger.child({ plugin: PLUGIN, instance });
    this.clock = depsClock(deps);
  }

  get address(): ListenAddress | undefined {
    return this.bound;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.log.error('webhook request failed', { err: describeNetworkError(err) });
        reply(res, 500, 'internal error');
      });
    });
    server.headersTimeout = 10_000;
    server.requestTimeout = 30_000;
    const { host, port } = this.config.listen;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        reject(
          new ChannelError(
            'CHANNEL_LISTEN_FAILED',
            `${PLUGIN} instance ${this.instance}: cannot listen on ${host}:${port} (${err.code ?? err.message}); ` +
              'choose a free `listen` address',
          ),
        );
      };
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    server.on('error', (err) => this.log.error('webhook listener error', { err: err.message }));
    const addr = server.address() as AddressInfo;
    this.server = server;
    this.bound = { host: addr.address, port: addr.port };
    this.log.info('channel webhook listening', {
      host: addr.address,
      port: addr.port,
      path: this.config.path,
    });
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.bound = undefined;
    await new Promise<void>((resolve) => {
      // Requests still waiting for the runtime get a short grace, then their sockets are cut.
      const timer = setTimer(() => server.closeAllConnections(), 2000, { unref: true });
      server.close(() => {
        timer.cancel();
        resolve();
      });
      server.closeIdleConnections();
    });
  }

  updateCredentials(config: ChatAConfig): void {
    const next = resolveConfig(config);
    const old = this.config;
    if (
      next.listen.host !== old.listen.host ||
      next.listen.port !== old.listen.port ||
      next.path !== old.path
    ) {
      this.log.warn('channel listen change needs a new instance', { field: 'listen/path' });
    }
    this.config = { ...next, listen: old.listen, path: old.path };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== this.config.path) {
      req.resume();
      reply(res, 404, 'not found');
      return;
    }
    if (req.method === 'GET') {
      this.handleVerification(url, res);
      req.resume();
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      reply(res, 405, 'method not allowed', { allow: 'GET, POST' });
      return;
    }
    const result = await readRequestBody(req, MAX_WEBHOOK_BODY_BYTES);
    if (result.kind === 'aborted') return;
    if (result.kind === 'too_large') {
      this.log.warn('webhook body too large', { code: 'HTTP_BODY_TOO_LARGE', limit: MAX_WEBHOOK_BODY_BYTES });
      reply(res, 413, 'body too large', { connection: 'close' });
      return;
    }
    if (!signatureMatches(req.headers['x-hub-signature-256'], result.body, this.config.appSecret)) {
      this.log.warn('webhook signature rejected', { remote: req.socket.remoteAddress });
      reply(res, 401, 'bad signature');
      return;
    }
    const payload = parseJson(result.body.toString('utf8'));
    if (payload === undefined) {
      this.log.warn('webhook body is not JSON');
      reply(res, 400, 'body is not JSON');
      return;
    }
    const { messages, skipped } = extractTextMessages(payload);
    if (skipped > 0) this.log.debug('webhook messages skipped', { count: skipped, reason: 'not text' });
    try {
      for (const m of messages) await this.accept(m);
    } catch (err) {
      this.log.error('inbound not accepted', { err: describeNetworkError(err) });
      reply(res, 500, 'not accepted; retry later');
      return;
    }
    reply(res, 200, 'ok');
  }

  private handleVerification(url: URL, res: ServerResponse): void {
    const mode = url.searchParams.get('hub.mode');
    const token = url.searchParams.get('hub.verify_token') ?? '';
    const challenge = url.searchParams.get('hub.challenge');
    if (mode !== 'subscribe' || !secretEquals(token, this.config.verifyToken)) {
      this.log.warn('webhook verification refused');
      reply(res, 403, 'forbidden');
      return;
    }
    if (challenge === null || challenge.length > 1024) {
      reply(res, 400, 'hub.challenge missing');
      return;
    }
    this.log.info('webhook verification accepted');
    reply(res, 200, challenge);
  }

  private async accept(m: WebhookTextMessage): Promise<void> {
    if (m.phoneNumberId !== undefined && m.phoneNumberId !== this.config.phoneNumberId) {
      this.log.warn('inbound for another phone number ignored', { phone_number_id: m.phoneNumberId });
      return;
    }
    if (this.seen.has(m.id)) return;
    const pending = this.inflight.get(m.id);
    if (pending) return pending;
    const msg: InboundMessage = {
      plugin: PLUGIN,
      instance: this.instance,
      chatId: m.from,
      senderId: m.from,
      text: m.text,
      messageId: m.id,
      receivedAt: this.clock.now().toISOString(),
    };
    const p = this.deps.onInbound(msg).then(() => {
      this.seen.add(m.id);
      if (this.seen.size > SEEN_LIMIT) this.seen.delete(this.seen.values().next().value as string);
    });
    this.inflight.set(m.id, p);
    try {
      await p;
    } finally {
      this.inflight.delete(m.id);
    }
  }

  async send(msg: { to: string; text: string }): Promise<SendResult> {
    checkOutbound(PLUGIN, msg);
    const ids: string[] = [];
    for (const part of splitText(msg.text)) {
      ids.push(await this.sendPart(msg.to, part, ids));
    }
    this.log.debug('channel message sent', { to: msg.to, parts: ids.length });
    return { ids };
  }

  private async sendPart(to: string, body: string, sentIds: string[]): Promise<string> {
    const c = this.config;
    const url = `${c.baseUrl}/${encodeURIComponent(c.apiVersion)}/${encodeURIComponent(c.phoneNumberId)}/messages`;
    const secrets = [c.accessToken, c.appSecret];
    let status: number;
    let text: string;
    try {
      const res = await vendorRequest(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${c.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messaging_product: 'whatsapp', to, type: 'text', text: { body } }),
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      status = res.statusCode;
      text = await readCapped(res.body, MAX_RESPONSE_BYTES);
    } catch (err) {
      const reason = redact(describeNetworkError(err), secrets);
      this.log.warn('channel send failed', { to, err: reason });
      throw new ChannelSendError(
        `${PLUGIN}: the WhatsApp Cloud API could not be reached (${reason}); retry later`,
        {
          retryable: true,
          sentIds: [...sentIds],
        },
      );
    }
    const payload = parseJson(text);
    if (status < 200 || status > 299) {
      const error = isRecord(payload) && isRecord(payload.error) ? payload.error : {};
      const detail =
        typeof error.message === 'string' ? `: ${redact(error.message, secrets).slice(0, 300)}` : '';
      const retryable = isRetryableStatus(status);
      this.log.warn('channel send failed', { to, status, retryable });
      throw new ChannelSendError(
        `${PLUGIN}: the WhatsApp Cloud API answered ${status}${detail}` +
          (retryable ? '; retry later' : '; check the recipient and the instance credentials'),
        { status, retryable, sentIds: [...sentIds] },
      );
    }
    const first = isRecord(payload) && Array.isArray(payload.messages) ? payload.messages[0] : undefined;
    if (isRecord(first) && typeof first.id === 'string') return first.id;
    this.log.warn('channel send answer without message id', { to, status });
    return '';
  }
}

/** `chat_a`: WhatsApp Cloud API (webhook inbound, Graph API outbound). */
export const chatAChannel: ChannelPlugin<ChatAConfig, ChatAInstance> = {
  name: PLUGIN,
  instanceSchema: chatAInstanceSchema,
  create: (instance, config, deps) => new ChatAChannelInstance(instance, config, deps),
};
