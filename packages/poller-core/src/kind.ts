/** The plugin API a poller kind implements. Kinds only fetch; the runner owns everything else. */
import { compileSchema } from '@agent/json-schema';
import type { GuardedRequestOptions, GuardedResponse } from '@agent/guarded-http';
import type { Logger } from '@agent/log';
import { PollerError } from './errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The plugin API generation this package implements; the registry refuses kinds built for another. */
export const POLLER_API_VERSION = 1 as const;
/** Brand stamped by `definePollerKind`; a registered symbol, so duplicate package copies agree. */
export const POLLER_KIND_BRAND: unique symbol = Symbol.for('@agent/poller-kind') as never;
/** Kind and tool names: at most 64 characters (a kind name is a metric label and a log field). */
export const KIND_NAME_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/** One thing a tick found. `id` is stable across ticks: it is the dedup key. */
export interface PollItem {
  id: string;
  /** Values for `message_template`; a function is asked per placeholder (unknown: `undefined`). */
  fields: Readonly<Record<string, string>> | ((placeholder: string) => string | undefined);
  /** Runs after the delivery was committed (e.g. mark-read). A failure is logged and never repeats the item. */
  onDelivered?(): Promise<void>;
}

export interface TickResult<Cursor extends JsonValue = JsonValue> {
  /** Oldest first. Ids already delivered are skipped by the runner. */
  items: PollItem[];
  /** The next cursor; committed only once every new item was delivered. Omitted: the cursor is unchanged. */
  cursor?: Cursor;
  /** The source said nothing changed (e.g. HTTP 304): a zero-cost ok tick. */
  notModified?: boolean;
}

/** HTTP for a tick: the guarded client with the tick signal and the job's `allow_private_networks`. */
export interface PollerHttp {
  request(url: string | URL, options?: GuardedRequestOptions): Promise<GuardedResponse>;
}

export interface TickContext<
  Config = Record<string, unknown>,
  Cursor extends JsonValue = JsonValue,
  Shared = unknown,
> {
  job: { readonly id: string; readonly agent: string; readonly kind: string };
  /** The validated job config, defaults filled in. */
  config: Readonly<Config>;
  /**
   * The cursor the kind's last committed tick returned; `null` on the first tick and after `reset`. It is
   * stored JSON, not checked against `Cursor`: a kind reads it defensively (an older version may have
   * written another shape).
   */
  cursor: Cursor | null;
  /** The (agent, kind) shared resource from `createShared`; `undefined` when the kind has none. */
  shared: Shared;
  http: PollerHttp;
  /** Aborted on lease loss, replace/remove, pause, shutdown and at the tick deadline. */
  signal: AbortSignal;
  logger: Logger;
  now(): Date;
}

/** A resolved provider account (from `plugins/<credentials>.yaml` `accounts`). */
export interface ResolvedAccount {
  /** Account name, as named by the agent's `credentials`. */
  name: string;
  /** The account block, secrets resolved. Never log it. */
  config: Readonly<Record<string, unknown>>;
}

export interface SharedContext {
  agentId: string;
  /** `null` when the kind declares no `credentials`. */
  account: ResolvedAccount | null;
  http: PollerHttp;
  logger: Logger;
}

export interface ToolContext {
  agentId: string;
  logger: Logger;
  signal: AbortSignal;
}

/** A tool an agent can call. The agent runtime accepts this shape structurally. */
export interface AgentTool {
  name: string;
  description: string;
  /** JSON Schema of `args`. */
  parameters: Readonly<Record<string, unknown>>;
  handler(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown>;
}

/** A tool of a kind: its handler also gets the calling agent's shared resource. */
export interface KindTool<Shared = unknown> {
  name: string;
  description: string;
  parameters: Readonly<Record<string, unknown>>;
  handler(args: Record<string, unknown>, ctx: ToolContext & { shared: Shared }): Promise<unknown>;
}

/** A problem of a job config found by a kind check, located inside `config`. */
export interface KindConfigProblem {
  /** Path inside the job's `config`, e.g. `['query']`; `[]` for the config as a whole. */
  path: readonly (string | number)[];
  message: string;
  /** How to fix it. */
  fix?: string;
}

/**
 * A kind: `Config` is its validated job config (derive it from `configSchema`), `Cursor` the JSON it keeps
 * between ticks (`never` when it keeps none), `Shared` its per-(agent, kind) resource.
 */
export interface PollerKindDefinition<
  Config = Record<string, unknown>,
  Cursor extends JsonValue = JsonValue,
  Shared = unknown,
> {
  /** `^[a-z][a-z0-9_]{0,63}$`, e.g. `rss`, `webhook_poll`, `acme_jira`. */
  readonly kind: string;
  readonly apiVersion: typeof POLLER_API_VERSION;
  /** JSON Schema of `config`. Must declare `deliver` and `message_template` (see `withBaseConfig`). */
  readonly configSchema: Readonly<Record<string, unknown>>;
  /** Placeholders the items provide; unknown ones in `message_template` are rejected at validation. */
  readonly placeholders: readonly string[] | 'any';
  /** Provider-account plugin file the runner resolves for the job agent (e.g. `mail`). */
  readonly credentials?: string;
  /** First tick dispatches what it returns instead of recording a baseline (e.g. mail within `newer_than`). */
  readonly backfillOnFirstTick?: boolean;
  /** One per (agent, kind); shared by that agent's jobs and tools. `close()` is called when dropped. */
  createShared?(ctx: SharedContext): Shared | Promise<Shared>;
  /** Extra semantic checks of a schema-valid config; each string is one problem. */
  validate?(config: Config, ctx: { jobId: string; agentId: string }): string[];
  /**
   * Checks that need the job agent's provider account (a kind with `credentials`), e.g. a query that only
   * some providers can run. Called at boot, at every reload and by `--check-config`, for a schema-valid
   * config whose account resolved. Never put account values (secrets) in a problem.
   */
  validateWithAccount?(
    config: Config,
    ctx: { jobId: string; agentId: string; account: ResolvedAccount },
  ): KindConfigProblem[];
  /**
   * Identity of the source; a reload keeps the cursor unless this changes. Only its SHA-256 is stored (it may
   * hold a URL path with a token), so it may name the source in full.
   */
  sourceKey?(config: Config): string;
  tick(ctx: TickContext<Config, Cursor, Shared>): Promise<TickResult<Cursor>>;
  readonly tools?: readonly KindTool<Shared>[];
}

// Defaults are `any` so that a kind with a specific Config/Cursor/Shared is a `PollerKind` (its methods
// take those types as parameters). Not `Readonly<...>`; the object itself is frozen at runtime.
export type PollerKind<
  // oxlint-disable-next-line typescript/no-explicit-any
  Config = any,
  // oxlint-disable-next-line typescript/no-explicit-any
  Cursor extends JsonValue = any,
  // oxlint-disable-next-line typescript/no-explicit-any
  Shared = any,
> = PollerKindDefinition<Config, Cursor, Shared> & {
  readonly [POLLER_KIND_BRAND]: typeof POLLER_API_VERSION;
};

/** JSON Schema of `deliver`. */
export const deliverConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['channel', 'to'],
  properties: {
    channel: {
      type: 'string',
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$',
      maxLength: 64,
      description: 'Channel plugin; the job agent needs a binding for it.',
    },
    to: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      pattern: '^[^\\u0000-\\u001f\\u007f]+$',
      description: 'Recipient id on that channel: at most 256 characters, no control characters.',
    },
  },
} as const;

/** The config fields every kind has, and the generic ones the runner honours. */
export const baseConfigProperties = {
  deliver: deliverConfigSchema,
  message_template: {
    type: 'string',
    minLength: 1,
    description: 'Text sent per item; `{placeholder}` fields, `{{`/`}}` for braces.',
  },
  max_per_tick: {
    type: 'integer',
    minimum: 1,
    description: 'Items delivered per tick at most; the rest wait for the next tick.',
  },
  dispatch_delay_ms: {
    type: 'integer',
    minimum: 0,
    maximum: 600000,
    description: 'Pause between two deliveries of one tick.',
  },
  max_items_considered: {
    type: 'integer',
    minimum: 1,
    maximum: 100000,
    description:
      'Items of one fetch a tick considers, the newest kept (default 10000); the rest are dropped with a warning.',
  },
} as const;

/** Items of one fetch a tick considers when the job does not set `max_items_considered`. */
export const DEFAULT_MAX_ITEMS_CONSIDERED = 10_000;

/**
 * The job's `max_items_considered`: the runner keeps at most this many items of a fetch (the newest, the last
 * of the oldest-first list). A kind that parses a large response can stop at it early and save the work.
 */
export function maxItemsConsidered(config: { readonly max_items_considered?: unknown }): number {
  const n = config.max_items_considered;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : DEFAULT_MAX_ITEMS_CONSIDERED;
}

type Flat<T> = { [K in keyof T]: T[K] } & {};

/**
 * The schema `withBaseConfig` returns, typed precisely enough for `FromSchema` (json-schema-to-ts) and the
 * like: the kind's properties over the base ones, `deliver` and `message_template` required.
 */
type WithBaseConfig<S extends { properties?: object; required?: readonly string[] }> = Flat<
  Omit<S, 'type' | 'properties' | 'required'> & {
    readonly type: 'object';
    readonly properties: Flat<
      Omit<typeof baseConfigProperties, keyof NonNullable<S['properties']>> & NonNullable<S['properties']>
    >;
    readonly required: readonly [
      'deliver',
      'message_template',
      ...(S['required'] extends readonly string[] ? S['required'] : []),
    ];
  }
>;

/** Adds `deliver`, `message_template`, `max_per_tick`, `dispatch_delay_ms` and `max_items_considered` to an object schema. */
export function withBaseConfig<
  const S extends { properties?: Record<string, unknown>; required?: readonly string[] },
>(schema: S): WithBaseConfig<S> {
  return {
    type: 'object',
    ...schema,
    properties: { ...baseConfigProperties, ...schema.properties },
    required: [...new Set(['deliver', 'message_template', ...(schema.required ?? [])])],
  } as never;
}

function invalid(kind: unknown, message: string): PollerError {
  const name =
    typeof kind === 'string' ? `kind "${kind.length > 64 ? `${kind.slice(0, 40)}…` : kind}"` : 'kind';
  return new PollerError('POLLER_INVALID_KIND', `${name}: ${message}`);
}

/**
 * Checks a kind definition, freezes it and brands it. Throws `PollerError` `POLLER_INVALID_KIND` or
 * `POLLER_KIND_API_VERSION` with a message that says what to fix.
 */
export function definePollerKind<
  Config = Record<string, unknown>,
  Cursor extends JsonValue = JsonValue,
  Shared = unknown,
>(def: PollerKindDefinition<Config, Cursor, Shared>): PollerKind<Config, Cursor, Shared> {
  if (def === null || typeof def !== 'object') throw invalid(undefined, 'definition must be an object');
  if (typeof def.kind !== 'string' || !KIND_NAME_PATTERN.test(def.kind))
    throw invalid(def.kind, `name must match ${KIND_NAME_PATTERN.source} (lower case, digits, underscores)`);
  if (def.apiVersion !== POLLER_API_VERSION)
    throw new PollerError(
      'POLLER_KIND_API_VERSION',
      `kind "${def.kind}": apiVersion ${String(def.apiVersion)} is not supported; this @agent/poller-core implements apiVersion ${POLLER_API_VERSION}`,
    );
  if (typeof def.tick !== 'function') throw invalid(def.kind, 'tick must be a function');
  const schema = def.configSchema as { properties?: Record<string, unknown> } | undefined;
  if (!schema || typeof schema !== 'object')
    throw invalid(def.kind, 'configSchema must be a JSON Schema object');
  for (const field of ['deliver', 'message_template'])
    if (!schema.properties || !(field in schema.properties))
      throw invalid(def.kind, `configSchema must declare "${field}" (wrap it with withBaseConfig)`);
  try {
    compileSchema(schema);
  } catch (err) {
    throw invalid(def.kind, `configSchema does not compile: ${(err as Error).message}`);
  }
  if (
    def.placeholders !== 'any' &&
    (!Array.isArray(def.placeholders) || def.placeholders.some((p) => typeof p !== 'string'))
  )
    throw invalid(def.kind, "placeholders must be a list of names or 'any'");
  if (def.credentials !== undefined && (typeof def.credentials !== 'string' || !def.credentials))
    throw invalid(def.kind, 'credentials must be the name of a provider-account plugin file');
  for (const f of ['createShared', 'validate', 'validateWithAccount', 'sourceKey'] as const)
    if (def[f] !== undefined && typeof def[f] !== 'function')
      throw invalid(def.kind, `${f} must be a function`);
  const names = new Set<string>();
  for (const t of def.tools ?? []) {
    if (
      !t ||
      typeof t.name !== 'string' ||
      !KIND_NAME_PATTERN.test(t.name) ||
      typeof t.handler !== 'function'
    )
      throw invalid(def.kind, 'every tool needs a snake_case name and a handler');
    if (names.has(t.name)) throw invalid(def.kind, `tool "${t.name}" is defined twice`);
    names.add(t.name);
  }
  const kind = {
    ...def,
    placeholders: def.placeholders === 'any' ? 'any' : Object.freeze([...def.placeholders]),
  };
  if (def.tools) kind.tools = Object.freeze(def.tools.map((t) => Object.freeze({ ...t })));
  Object.defineProperty(kind, POLLER_KIND_BRAND, { value: POLLER_API_VERSION, enumerable: false });
  return Object.freeze(kind) as PollerKind<Config, Cursor, Shared>;
}

/** True for a value made by `definePollerKind` of any copy of this package. */
export function isPollerKind(value: unknown): value is PollerKind {
  return value !== null && typeof value === 'object' && POLLER_KIND_BRAND in value;
}

/** Config fields every kind has and the runner reads; they never make a job's source. */
export const GENERIC_CONFIG_FIELDS: readonly string[] = [
  'message_template',
  'deliver',
  'max_per_tick',
  'dispatch_delay_ms',
  'max_items_considered',
];

/**
 * Stable JSON: `JSON.stringify` with every object's keys sorted (by UTF-16 code units). Written out by hand:
 * a replacer that rebuilt each object sorted took about 95 ms of a CPU profile of a 10,000-job start.
 */
export function canonicalJson(value: unknown): string {
  return canonicalPart(value) as string;
}

const isArrayIndex = (key: string): boolean => /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 2 ** 32 - 1;

/** Keys in the order the sorted object listed them: integer keys first, ascending, then the rest sorted. */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  // Object.keys already lists integer keys first, ascending: only the others need sorting.
  let firstOther = 0;
  while (firstOther < keys.length && isArrayIndex(keys[firstOther]!)) firstOther++;
  if (firstOther === 0) return keys.sort();
  return [...keys.slice(0, firstOther), ...keys.slice(firstOther).sort()];
}

/** One value as `JSON.stringify` writes it (`toJSON` first); `undefined` where it leaves the value out. */
function canonicalPart(input: unknown): string | undefined {
  const value =
    input !== null &&
    typeof input === 'object' &&
    typeof (input as { toJSON?: unknown }).toJSON === 'function'
      ? (input as { toJSON(): unknown }).toJSON()
      : input;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    // By index, not `map`: a hole is `null` too.
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + (canonicalPart(value[i]) ?? 'null');
    return out + ']';
  }
  let out = '{';
  for (const key of sortedKeys(value)) {
    const part = canonicalPart((value as Record<string, unknown>)[key]);
    if (part !== undefined) out += (out.length > 1 ? ',' : '') + JSON.stringify(key) + ':' + part;
  }
  return out + '}';
}
