/**
 * `example_counter`: the smallest useful poller kind. Each tick yields one numbered item, taken from
 * its cursor, so the runner's baseline, dedup, carry-over and delivery can be watched end to end.
 * It shows what a third-party kind package needs: a schema built with `withBaseConfig`, the
 * placeholders its items provide, a JSON cursor, stable ids, signal handling and error classes.
 */
import {
  definePollerKind,
  PermanentError,
  TransientError,
  withBaseConfig,
  type JsonValue,
} from '@agent/poller-core';

export interface ExampleCounterConfig {
  deliver: { channel: string; to: string };
  message_template: string;
  /** First number (default 1). */
  start: number;
  /** Prefix of item ids and of `{label}` (default `counter`). */
  prefix: string;
  /** Makes every tick fail with this class: for trying alerts and the breaker. */
  simulate_failure?: 'transient' | 'permanent';
  max_per_tick?: number;
  dispatch_delay_ms?: number;
}

/** What a tick keeps for the next one: a type alias of JSON, the kind's second type parameter. */
type Cursor = { next: number };

function nextOf(stored: Cursor | null, start: number): number {
  // Stored JSON: an older version may have written another shape, so it is read as any JSON value.
  const cursor: JsonValue = stored;
  const n = cursor && typeof cursor === 'object' && !Array.isArray(cursor) ? cursor.next : undefined;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : start;
}

export const exampleCounterPollerKind = definePollerKind<ExampleCounterConfig, Cursor>({
  kind: 'example_counter',
  apiVersion: 1,
  configSchema: withBaseConfig({
    additionalProperties: false,
    properties: {
      start: { type: 'integer', minimum: 0, default: 1 },
      prefix: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', default: 'counter' },
      simulate_failure: { enum: ['transient', 'permanent'] },
    },
  }),
  placeholders: ['n', 'label'],
  validate(config) {
    return config.start > 1_000_000_000 ? ['start must be at most 1000000000'] : [];
  },
  sourceKey: (config) => `${config.prefix}:${config.start}`,
  async tick(ctx) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (ctx.config.simulate_failure === 'permanent') throw new PermanentError('simulated permanent failure');
    if (ctx.config.simulate_failure === 'transient')
      throw new TransientError('simulated transient failure', { retryAfterMs: 1000 });
    const n = nextOf(ctx.cursor, ctx.config.start);
    return {
      items: [
        { id: `${ctx.config.prefix}-${n}`, fields: { n: String(n), label: `${ctx.config.prefix} ${n}` } },
      ],
      cursor: { next: n + 1 },
    };
  },
});

export default exampleCounterPollerKind;
