/**
 * The key stored for a job's source (`poll_state.source_key`): a replaced job keeps its cursor and seen set
 * while its source key is the same, and baselines again when it changes.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, GENERIC_CONFIG_FIELDS, type PollerKind } from '@agent/poller-core';

/** The kind's `sourceKey`, or kind + config without the generic fields (template, deliver, limits). */
function sourceIdentity(kind: PollerKind, config: Record<string, unknown>): string {
  if (kind.sourceKey) return `${kind.kind}:${kind.sourceKey(config)}`;
  const rest = Object.fromEntries(Object.entries(config).filter(([k]) => !GENERIC_CONFIG_FIELDS.includes(k)));
  return `${kind.kind}:${canonicalJson(rest)}`;
}

/** `sha256:<hex>` of a source identity: what `poll_state.source_key` holds. */
export function hashSourceKey(identity: string): string {
  return `sha256:${createHash('sha256').update(identity).digest('hex')}`;
}

/**
 * The key stored for the job's source: a hash of its identity (see `sourceIdentity`), compared only for
 * equality. Never the identity itself: a URL path or a config value may hold a secret.
 */
export function sourceKeyOf(kind: PollerKind, config: Record<string, unknown>): string {
  return hashSourceKey(sourceIdentity(kind, config));
}

/**
 * Whether a stored source key names the source whose key is `current`. Rows written before keys were hashed
 * hold the identity itself, whose hash is `current` when the source did not change: such a row keeps its
 * cursor (the caller rewrites the key) instead of baselining every job again at upgrade.
 */
export function sameSource(stored: string | null, current: string): boolean {
  if (stored === null) return false;
  return stored === current || hashSourceKey(stored) === current;
}
