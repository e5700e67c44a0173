/** The `mail` poller kind and its `mail_count_unread` tool. */
import { createAccountClient, providerAccountSchema, type RefreshTokenClient } from '@agent/oauth2';
import {
  definePollerKind,
  PermanentError,
  PollerError,
  type KindTool,
  type PollerKind,
  type PollItem,
  type SharedContext,
  type TickContext,
} from '@agent/poller-core';
import { createMailApi, type MailApi } from './api.js';
import { mailConfigProblems, mailConfigSchema, type MailConfig } from './config.js';
import { compilePattern, extractOne } from './extract.js';
import { parseMessage, type MailMessage } from './message.js';
import { senderAllowed } from './sender.js';

type Logger = TickContext['logger'];

const MAIL_API_BASE_URL = 'https://gmail.googleapis.com';

/** JSON Schema of one `accounts.<name>` block of `plugins/mail.yaml`. */
export const mailAccountSchema = providerAccountSchema(MAIL_API_BASE_URL, 'mail account');

/** Labels of messages that are never dispatched: the owner's own drafts, sent and scheduled mail. */
const SKIPPED_LABELS: readonly string[] = ['DRAFT', 'SENT', 'SCHEDULED'];

/** Parsed messages kept per agent, so a message is fetched once, not on every tick. */
const MESSAGE_CACHE_SIZE = 5000;
/** `messages.get` calls in flight at once during a tick. */
const FETCH_CONCURRENCY = 4;
/** Ids `mail_count_unread` pages through before it falls back to the API estimate. */
const COUNT_MAX_IDS = 5000;

/** The per-(agent, kind) resource: one OAuth2 client (single-flight refresh) and a message cache. */
export interface MailShared {
  readonly accountName: string;
  readonly oauth: RefreshTokenClient;
  readonly api: MailApi;
  /** Parsed messages by id, least recently used first. */
  readonly cache: Map<string, MailMessage>;
  close(): void;
}

function createMailShared(ctx: SharedContext): MailShared {
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
  return { accountName, oauth, api, cache: new Map(), close: () => oauth.close() };
}

function remember(shared: MailShared, m: MailMessage): void {
  shared.cache.delete(m.id);
  shared.cache.set(m.id, m);
  while (shared.cache.size > MESSAGE_CACHE_SIZE) shared.cache.delete(shared.cache.keys().next().value!);
}

async function fetchAll(
  shared: MailShared,
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

/** Compiled `extract` patterns, per config object (configs are frozen per job definition). */
const compiled = new WeakMap<object, [string, RegExp][]>();
function patternsOf(config: MailConfig): [string, RegExp][] {
  let p = compiled.get(config);
  if (!p) {
    p = Object.entries(config.extract ?? {}).map(([k, v]) => [k, compilePattern(v)]);
    compiled.set(config, p);
  }
  return p;
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
    const r = await ctx.shared.api.list(q, ctx.signal, COUNT_MAX_IDS);
    return r.truncated
      ? { query: q, count: Math.max(r.ids.length, r.estimate), exact: false }
      : { query: q, count: r.ids.length, exact: true };
  },
};

/** The `mail` kind; register it with the poller runtime. It keeps no cursor: dedup is the runner's seen set. */
export const mailPollerKind: PollerKind<MailConfig, never, MailShared> = definePollerKind({
  kind: 'mail',
  apiVersion: 1,
  configSchema: mailConfigSchema,
  // The template is checked in `validate`, against the built-ins plus this job's extract names.
  placeholders: 'any',
  credentials: 'mail',
  backfillOnFirstTick: true,
  createShared: createMailShared,
  validate: (config) => mailConfigProblems(config),
  sourceKey: (config) => config.query.trim(),
  async tick(ctx) {
    const { config, shared, signal, logger } = ctx;
    const listed = await shared.api.list(tickQuery(config), signal);
    if (listed.truncated)
      logger.warn('mail listing truncated: older matches wait for a later tick', {
        listed: listed.ids.length,
        estimate: listed.estimate,
      });
    const messages = await fetchAll(shared, listed.ids, signal, logger);
    const patterns = patternsOf(config);
    const required = config.require_fields ?? [];
    const allow = config.sender_allowlist ?? [];
    const picked: { m: MailMessage; extracted: Record<string, string> }[] = [];
    let filtered = 0;
    for (const m of messages) {
      if (m.labelIds.some((l) => SKIPPED_LABELS.includes(l))) continue;
      if (!senderAllowed(m.fromAddress, allow)) {
        filtered++;
        continue;
      }
      const extracted: Record<string, string> = {};
      const text = m.text || m.snippet;
      for (const [name, re] of patterns) {
        const r = extractOne(re, text);
        if (r.value !== undefined) extracted[name] = r.value;
        else if (r.timedOut)
          logger.warn('mail extract pattern timed out; the field is left empty', {
            field: name,
            message_id: m.id,
          });
      }
      if (required.some((f) => extracted[f] === undefined)) {
        filtered++;
        continue;
      }
      picked.push({ m, extracted });
    }
    if (filtered) logger.debug('mail messages filtered out', { filtered });
    // Oldest first by receipt time; the id breaks ties so the order is stable.
    picked.sort(
      (a, b) => a.m.internalDate - b.m.internalDate || (a.m.id < b.m.id ? -1 : a.m.id > b.m.id ? 1 : 0),
    );
    const items: PollItem[] = picked.map(({ m, extracted }) => {
      const fields: Record<string, string> = {
        ...extracted,
        snippet: m.snippet,
        subject: m.subject,
        from: m.from,
        from_address: m.fromAddress ?? '',
        date: m.date,
        id: m.id,
        thread_id: m.threadId,
      };
      const item: PollItem = { id: m.id, fields };
      if (config.mark_read_on_dispatch) item.onDelivered = () => shared.api.markRead([m.id]);
      return item;
    });
    return { items };
  },
  tools: [countTool],
});
