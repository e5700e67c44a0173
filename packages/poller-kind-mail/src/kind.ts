/** The `mail` poller kind and its `mail_count_unread` tool. */
import { createAccountClient, type RefreshTokenClient } from '@agent/oauth2';
import { MAIL_API_BASE_URL, mailProviderOf, parseImapAccount } from './account.js';
import { createImapSession, imapAccountProblem } from './imap-session.js';
import {
  imapCountUnread,
  imapQueryProblems,
  imapTick,
  type ImapCursor,
  type ImapMailbox,
} from './imap-source.js';
import {
  definePollerKind,
  PermanentError,
  PollerError,
  type KindTool,
  type PollerKind,
  type SharedContext,
  type TickContext,
} from '@agent/poller-core';
import { createMailApi, type MailApi } from './api.js';
import { mailConfigProblems, mailConfigSchema, type MailConfig } from './config.js';
import { mailItems } from './items.js';
import { parseMessage, type MailMessage } from './message.js';

type Logger = TickContext['logger'];

/** Parsed messages kept per agent, so a message is fetched once, not on every tick. */
const MESSAGE_CACHE_SIZE = 5000;
/** `messages.get` calls in flight at once during a tick. */
const FETCH_CONCURRENCY = 4;
/** Ids `mail_count_unread` pages through before it falls back to the API estimate. */
const COUNT_MAX_IDS = 5000;

/** The per-(agent, kind) resource: one OAuth2 client (single-flight refresh) and a message cache. */
interface GmailShared {
  readonly provider: 'gmail';
  readonly accountName: string;
  readonly oauth: RefreshTokenClient;
  readonly api: MailApi;
  /** Parsed messages by id, least recently used first. */
  readonly cache: Map<string, MailMessage>;
  close(): void;
}

/** The per-(agent, kind) resource of an IMAP account: one connection shared by its jobs and the tool. */
interface ImapShared extends ImapMailbox {
  readonly provider: 'imap';
  close(): Promise<void>;
}

export type MailShared = GmailShared | ImapShared;

function createMailShared(ctx: SharedContext): MailShared {
  if (ctx.account && mailProviderOf(ctx.account.config) === 'imap') {
    let account;
    try {
      account = parseImapAccount(ctx.account.config);
    } catch (err) {
      throw new PermanentError(
        `mail account "${ctx.account.name}" (plugins/mail.yaml accounts.${ctx.account.name}): ${(err as Error).message}`,
      );
    }
    const session = createImapSession(account, ctx.account.name);
    return {
      provider: 'imap',
      accountName: ctx.account.name,
      mailbox: account.mailbox,
      session,
      cache: new Map(),
      close: () => session.close(),
    };
  }
  let built;
  try {
    built = createAccountClient({
      plugin: 'mail',
      agentId: ctx.agentId,
      account: ctx.account,
      apiBaseUrl: MAIL_API_BASE_URL,
      http: ctx.http,
      logger: ctx.logger,
    });
  } catch (err) {
    // A missing or malformed account needs the operator: the job pauses.
    throw new PermanentError((err as Error).message, { cause: err });
  }
  const { account, accountName, client: oauth } = built;
  const api = createMailApi({
    client: oauth,
    apiBaseUrl: account.apiBaseUrl,
    account: accountName,
    allowPrivateNetworks: account.allowPrivateNetworks,
  });
  return { provider: 'gmail', accountName, oauth, api, cache: new Map(), close: () => oauth.close() };
}

function remember(shared: GmailShared, m: MailMessage): void {
  shared.cache.delete(m.id);
  shared.cache.set(m.id, m);
  while (shared.cache.size > MESSAGE_CACHE_SIZE) shared.cache.delete(shared.cache.keys().next().value!);
}

async function fetchAll(
  shared: GmailShared,
  ids: string[],
  signal: AbortSignal,
  logger: Logger,
): Promise<MailMessage[]> {
  const out = new Map<string, MailMessage>();
  const missing: string[] = [];
  for (const id of ids) {
    const hit = shared.cache.get(id);
    if (hit) {
      remember(shared, hit);
      out.set(id, hit);
    } else missing.push(id);
  }
  let next = 0;
  const worker = async () => {
    while (next < missing.length) {
      const id = missing[next++]!;
      const resource = await shared.api.get(id, signal);
      const m = resource === null ? null : parseMessage(resource);
      if (!m) {
        logger.debug('mail message vanished before it was read', { message_id: id });
        continue;
      }
      remember(shared, m);
      out.set(id, m);
    }
  };
  await Promise.all(Array.from({ length: Math.min(FETCH_CONCURRENCY, missing.length) }, worker));
  return ids.map((id) => out.get(id)).filter((m): m is MailMessage => m !== undefined);
}

/** The mailbox query of a tick: the job query plus ` newer_than:<window>`. */
export function tickQuery(config: Pick<MailConfig, 'query' | 'newer_than'>): string {
  return `${config.query.trim()} newer_than:${config.newer_than}`.trim();
}

const countTool: KindTool<MailShared> = {
  name: 'mail_count_unread',
  description:
    "Count unread messages in this agent's mailbox matching a search query (e.g. `from:shop.example`). Read-only: nothing is marked, delivered or remembered.",
  parameters: {
    type: 'object',
    additionalProperties: false,
    properties: {
      query: { type: 'string', maxLength: 2000, description: 'Search query; `is:unread` is added.' },
      newer_than: {
        type: 'string',
        pattern: '^[1-9][0-9]{0,3}[dmy]$',
        description: 'Only messages newer than this (e.g. `7d`).',
      },
    },
  },
  async handler(args, ctx) {
    const query = args.query === undefined ? '' : args.query;
    const window = args.newer_than;
    if (typeof query !== 'string' || query.length > 2000)
      throw new PollerError('POLLER_INVALID_CONFIG', 'query must be a string of at most 2000 characters');
    if (window !== undefined && (typeof window !== 'string' || !/^[1-9][0-9]{0,3}[dmy]$/.test(window)))
      throw new PollerError('POLLER_INVALID_CONFIG', 'newer_than must look like 7d, 2m or 1y');
    const parts = [query.trim()];
    if (!/(^|\s)is:unread(\s|$)/i.test(query)) parts.unshift('is:unread');
    if (window) parts.push(`newer_than:${window}`);
    const q = parts.filter(Boolean).join(' ');
    if (ctx.shared.provider === 'imap')
      return imapCountUnread(ctx.shared, q, window as string | undefined, ctx.signal, new Date());
    const r = await ctx.shared.api.list(q, ctx.signal, COUNT_MAX_IDS);
    return r.truncated
      ? { query: q, count: Math.max(r.ids.length, r.estimate), exact: false }
      : { query: q, count: r.ids.length, exact: true };
  },
};

/** The `mail` kind; register it with the poller runtime. It keeps no cursor: dedup is the runner's seen set. */
export const mailPollerKind: PollerKind<MailConfig, ImapCursor, MailShared> = definePollerKind({
  kind: 'mail',
  apiVersion: 1,
  configSchema: mailConfigSchema,
  // The template is checked in `validate`, against the built-ins plus this job's extract names.
  placeholders: 'any',
  credentials: 'mail',
  backfillOnFirstTick: true,
  createShared: createMailShared,
  validate: (config) => mailConfigProblems(config),
  validateWithAccount: (config, { account }) => {
    if (mailProviderOf(account.config) !== 'imap') return [];
    const refused = imapAccountProblem(account.config);
    return [
      ...(refused
        ? [
            {
              path: [],
              message: `mail account "${account.name}" (plugins/mail.yaml accounts.${account.name}): ${refused}`,
              fix: 'use tls: implicit (port 993) or tls: starttls (port 143), or a loopback host',
            },
          ]
        : []),
      ...imapQueryProblems(config, account.name),
    ];
  },
  sourceKey: (config) => config.query.trim(),
  async tick(ctx) {
    const { config, shared, signal, logger } = ctx;
    if (shared.provider === 'imap') return imapTick(ctx, shared);
    const listed = await shared.api.list(tickQuery(config), signal);
    if (listed.truncated)
      logger.warn('mail listing truncated: older matches wait for a later tick', {
        listed: listed.ids.length,
        estimate: listed.estimate,
      });
    const messages = await fetchAll(shared, listed.ids, signal, logger);
    const items = mailItems(messages, config, logger, (m) => shared.api.markRead([m.id]));
    return { items };
  },
  tools: [countTool],
});
