/**
 * The `webhook_poll` poller kind: one GET or POST to a JSON endpoint, the array at `items_path`, an id per
 * item from `id_field`. The runner owns everything after the fetch (baseline, seen set, `max_per_tick`,
 * delivery). Header values are secrets: they are sent, never logged or put in an error message.
 */
import { createHash } from 'node:crypto';
import {
  asPollerError,
  canonicalJson,
  definePollerKind,
  httpConfigProperties,
  httpRequestLimits,
  maxItemsConsidered,
  statusFailure,
  TransientError,
  withBaseConfig,
  type PollerKind,
  type TickContext,
  type TickResult,
} from '@agent/poller-core';
import { parsePath, selectItems, webhookFieldLookup } from './items.js';
import { DEFAULT_JSON_MAX_DEPTH, parseJsonAsync, safeUrl, urlProblems } from '@agent/guarded-http';
import type { FromSchema } from 'json-schema-to-ts';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

const WEBHOOK_DEFAULT_MAX_PER_TICK = 10;
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
// Headers the HTTP client owns (framing, pinning); a job setting them is refused at validation.
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

export const webhookConfigSchema = withBaseConfig({
  additionalProperties: false,
  required: ['url', 'id_field'],
  properties: {
    url: {
      type: 'string',
      minLength: 1,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description: 'The JSON endpoint; http or https.',
    },
    method: { enum: ['GET', 'POST'], default: 'GET', description: 'HTTP method.' },
    body: { description: 'JSON request body (POST only), sent with Content-Type: application/json.' },
    headers: {
      type: 'object',
      default: {},
      propertyNames: { pattern: HEADER_NAME, maxLength: 256 },
      additionalProperties: { type: 'string', maxLength: 8192 },
      description: 'Request headers; values may use ${ENV} and are never logged or shown.',
    },
    items_path: {
      type: 'string',
      default: '',
      description: 'Dotted path to the item array (`data.items`, `results.0.list`); "" is the root.',
    },
    id_field: {
      type: 'string',
      description: 'Dotted path, inside each item, to its dedup id; "" is the item itself.',
    },
    max_per_tick: {
      type: 'integer',
      minimum: 1,
      default: WEBHOOK_DEFAULT_MAX_PER_TICK,
      description: 'Items delivered per tick at most; the rest wait for the next tick.',
    },
    ...httpConfigProperties,
  },
});

/**
 * Config of a `webhook_poll` job, defaults filled in: what `webhookConfigSchema` accepts. `headers` values
 * are secrets (`${ENV}` already resolved by the config loader); `body` is JSON, sent with POST only.
 */
export type WebhookConfig = FromSchema<typeof webhookConfigSchema>;

function validate(config: WebhookConfig): string[] {
  const problems = urlProblems('url', config.url, config.allow_private_networks === true);
  if (config.body !== undefined && config.method !== 'POST')
    problems.push('body is only sent with method: POST; remove it or set method: POST');
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      problems.push(`headers.${name} is set by the HTTP client and cannot be configured; remove it`);
    // The value itself is never repeated: it is usually a secret.
    if (/[\r\n\0]/.test(value)) problems.push(`headers.${name} contains a line break or NUL character`);
  }
  for (const field of ['items_path', 'id_field'] as const) {
    const parsed = parsePath(config[field]);
    if (!parsed.ok) problems.push(`${field}: ${parsed.error}`);
  }
  return problems;
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/**
 * Identity of the source: method, URL, items_path, id_field and body. Headers are left out (rotating a
 * token keeps the seen set); the query string and body are hashed. The URL path stays readable here, but
 * this text is never stored: poller-core stores its SHA-256 (`sourceKeyOf`). Its format must not change,
 * or state rows written by earlier versions would no longer match and every job would baseline again.
 */
export function webhookSourceKey(
  config: Pick<WebhookConfig, 'url' | 'method' | 'items_path' | 'id_field' | 'body'>,
): string {
  const method = config.method ?? 'GET';
  const hidden = canonicalJson({ url: config.url, body: config.body ?? null });
  return `${method} ${safeUrl(config.url)} items_path=${JSON.stringify(config.items_path ?? '')} id_field=${JSON.stringify(config.id_field)} sha256:${sha256(hidden)}`;
}

async function tick(ctx: TickContext<WebhookConfig, never>): Promise<TickResult<never>> {
  const { config } = ctx;
  const method = config.method ?? 'GET';
  const what = `${method} ${safeUrl(config.url)}`;
  const configured = config.headers ?? {};
  const names = new Set(Object.keys(configured).map((n) => n.toLowerCase()));
  const sendBody = method === 'POST' && config.body !== undefined;
  const headers: Record<string, string> = {
    ...(names.has('accept') ? {} : { accept: 'application/json' }),
    ...(sendBody && !names.has('content-type') ? { 'content-type': 'application/json' } : {}),
    ...configured,
  };

  let res;
  try {
    res = await ctx.http.request(config.url, {
      method,
      headers,
      ...(sendBody ? { body: JSON.stringify(config.body) } : {}),
      ...httpRequestLimits(config),
    });
  } catch (err) {
    throw asPollerError(err, what);
  }
  if (res.status < 200 || res.status >= 300)
    // 4xx is Permanent, except 408, 425 and 429, which pass with time (the default).
    throw statusFailure(res, { what, hint: 'check url, method and headers, then resume the job' });
  // 204 No Content: nothing to report this time.
  if (res.status === 204) return { items: [] };

  // Parsed in slices (a 10 MB body would hold the event loop for 150 ms), nesting capped (every walker
  // after the parse is recursive).
  let data: unknown;
  try {
    data = await parseJsonAsync(res.text());
  } catch (err) {
    if ((err as { code?: unknown }).code === 'HTTP_JSON_TOO_DEEP')
      throw new TransientError(
        `${what}: the response nests objects and arrays deeper than ${DEFAULT_JSON_MAX_DEPTH} levels and is refused [HTTP_JSON_TOO_DEEP]`,
      );
    // The body is not quoted: an endpoint may echo request headers back.
    const type = (res.headers['content-type'] ?? 'none').split(';')[0]!.slice(0, 60);
    throw new TransientError(
      `${what}: the response is not JSON (content-type ${type}, ${res.body.length} bytes)`,
    );
  }
  const cap = maxItemsConsidered(config);
  const selected = selectItems(data, {
    itemsPath: config.items_path,
    idField: config.id_field,
    maxItems: cap,
  });
  data = undefined; // the items left out can be collected while the tick goes on
  if (!selected.ok) throw new TransientError(`${what}: ${selected.code}: ${selected.error}`);
  if (selected.dropped !== undefined)
    // Logged once per job definition by the runner, then counted.
    ctx.logger.warn('webhook_poll considered only the newest items of a large response', {
      considered: cap,
      dropped: selected.dropped,
      hint: 'raise max_items_considered if the endpoint really lists more new items per tick',
    });

  if (selected.skipped.length > 0) {
    // The runner logs this once per job definition and counts the repeats.
    const first = selected.skipped[0]!;
    ctx.logger.warn('webhook_poll items without a usable id were skipped', {
      skipped: selected.skipped.length,
      first_index: first.index,
      first_problem: first.message,
    });
  }
  return {
    items: selected.items.map(({ id, item }) => ({ id, fields: webhookFieldLookup(item) })),
  };
}

/**
 * The `webhook_poll` kind: generic JSON GET / POST endpoints. It keeps no cursor: dedup is the runner's
 * seen set.
 */
export const webhookPollerKind: PollerKind<WebhookConfig, never> = definePollerKind({
  kind: 'webhook_poll',
  apiVersion: 1,
  configSchema: webhookConfigSchema,
  placeholders: 'any',
  validate,
  sourceKey: webhookSourceKey,
  tick,
});
