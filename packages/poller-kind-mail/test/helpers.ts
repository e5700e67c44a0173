import { startFakeTokenEndpoint, type FakeTokenEndpoint } from '@agent/oauth2/testing';
import type { ResolvedAccount, SharedContext } from '@agent/poller-core';
import type { ServiceHarness, TestJobSpec } from '@agent/poller-runtime/testing';
import { mailPollerKind, type MailShared } from '../src/kind.js';
import { startFakeGmail, type DovecotServer, type FakeGmail } from '../src/testing.js';

export interface MailFixture {
  tokens: FakeTokenEndpoint;
  gmail: FakeGmail;
  account: ResolvedAccount;
  accountBlock: Record<string, unknown>;
  config(over?: Record<string, unknown>): Record<string, unknown>;
  close(): Promise<void>;
}

export async function startMailFixture(now: () => number = Date.now): Promise<MailFixture> {
  const tokens = await startFakeTokenEndpoint();
  const gmail = await startFakeGmail({ isValid: (t) => tokens.isValid(t), now });
  const accountBlock = tokens.account(gmail.url);
  return {
    tokens,
    gmail,
    accountBlock,
    account: { name: 'work', config: accountBlock },
    config: (over = {}) => ({
      query: 'is:unread',
      deliver: { channel: 'chat_a', to: 'u1' },
      message_template: '{subject} — {snippet}',
      dispatch_delay_ms: 0,
      ...over,
    }),
    async close() {
      await gmail.close();
      await tokens.close();
    },
  };
}

/** A minimal real HTTP client over the built-in fetch (structurally a `PollerHttp`), for building a shared client. */
function fetchHttp(): SharedContext['http'] {
  return {
    async request(url, options = {}) {
      const res = await fetch(url, {
        method: options.method ?? 'GET',
        headers: { ...options.headers },
        ...(options.body !== undefined ? { body: options.body } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const body = Buffer.from(await res.arrayBuffer());
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => (headers[k] = v));
      const ra = headers['retry-after'];
      return {
        status: res.status,
        headers,
        body,
        url: res.url,
        redirects: [],
        retryAfterMs: ra && /^\d+$/.test(ra) ? Number(ra) * 1000 : undefined,
        text: () => body.toString('utf8'),
        json: <T>() => JSON.parse(body.toString('utf8')) as T,
      };
    },
  };
}

const quietLogger: SharedContext['logger'] = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return quietLogger;
  },
};

/** The agent's shared mail resource, built the way the runner builds it. */
export async function sharedFor(f: MailFixture): Promise<MailShared> {
  return (await mailPollerKind.createShared!({
    agentId: 'assistant',
    account: f.account,
    http: fetchHttp(),
    logger: quietLogger,
  })) as MailShared;
}

/** A `mail` job of the test agent, every minute, delivering to `chat_a`/`u1`; `config` overrides. */
export function mailJob(
  id: string,
  config: Record<string, unknown> = {},
  extra: Partial<TestJobSpec> = {},
): TestJobSpec {
  return {
    id,
    kind: 'mail',
    agent: 'assistant',
    schedule: { every_secs: 60 },
    config: {
      query: 'is:unread',
      deliver: { channel: 'chat_a', to: 'u1' },
      message_template: '{subject} from {from_address}',
      dispatch_delay_ms: 0,
      ...config,
    },
    ...extra,
  };
}

/** The service's `mail_count_unread` tool as the test agent calls it: the arguments in, its answer out. */
export function countUnreadTool(h: ServiceHarness): (args: Record<string, unknown>) => Promise<unknown> {
  const tool = h.service.tools().find((t) => t.name === 'mail_count_unread');
  if (!tool) throw new Error('the service offers no mail_count_unread tool');
  const ctx = { agentId: 'assistant', logger: h.logger, signal: new AbortController().signal };
  return (args) => tool.handler(args, ctx);
}

/** The block of `accounts.<name>` in plugins/mail.yaml that reads `mailbox` of `server` over plain IMAP; `over` replaces fields. */
export function imapAccount(
  server: DovecotServer,
  mailbox: string,
  over: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    provider: 'imap',
    host: server.host,
    port: server.port,
    tls: 'none',
    user: server.user,
    password: server.password,
    mailbox,
    allow_private_networks: true,
    ...over,
  };
}
