/**
 * One shared resource per (agent, kind) (a kind's client, say), built on first use from the agent's account
 * and remembered with that account, so that a reload rebuilds only those whose account changed, and closes
 * those whose last job it removed (a tool builds its own again on its next call).
 */
import { agentDirectory, type RuntimeConfigView } from './agent-directory.js';
import type { GuardedHttp } from '@agent/guarded-http';
import type { Logger } from '@agent/log';
import {
  canonicalJson,
  PollerError,
  pollerHttp,
  safeReason,
  type PollerKind,
  type ResolvedAccount,
} from '@agent/poller-core';
import { pollersOf } from './pollers-section.js';
import type { KindRegistry } from './registry.js';

export interface SharedResources {
  /** The (agent, kind) resource, built on first use; `undefined` for a kind without one. */
  get(agentId: string, kind: PollerKind): Promise<unknown>;
  /** Closes every resource; the next use rebuilds it. */
  dropAll(): Promise<void>;
  /** Closes those whose account changed in the current snapshot (a rotated secret, another account). */
  dropChanged(): Promise<void>;
  /**
   * Closes those of an (agent, kind) that had jobs before the current snapshot and has none in it; call it
   * once the removed jobs stopped. One that only a tool ever used stays open across reloads.
   */
  dropUnused(): Promise<void>;
}

const keyOf = (agentId: string, kindName: string) => `${agentId}\u0000${kindName}`;

/** The (agent, kind) pairs that jobs of `snapshot` have. */
const withJobs = (snapshot: RuntimeConfigView): Set<string> =>
  new Set((pollersOf(snapshot)?.jobs ?? []).map((j) => keyOf(j.spec.agent, j.spec.kind)));

/** The account of `agentId` that `kind` needs; `null` for a kind without credentials. */
function resolveAccount(
  snapshot: RuntimeConfigView,
  agentId: string,
  kind: PollerKind,
): ResolvedAccount | null {
  if (!kind.credentials) return null;
  const agents = agentDirectory(snapshot);
  const name = agents.accountName(agentId, kind.credentials);
  const config = name ? agents.accountConfig(kind.credentials, name) : undefined;
  if (!name || !config)
    throw new PollerError(
      'POLLER_NO_CREDENTIALS',
      `agent "${agentId}" has no ${kind.credentials} account, which kind "${kind.kind}" needs`,
    );
  return { name, config };
}

export function createSharedResources(deps: {
  snapshot(): RuntimeConfigView;
  registry: KindRegistry;
  http: GuardedHttp;
  logger: Logger;
}): SharedResources {
  const { registry, http, logger } = deps;
  const cache = new Map<string, { promise: Promise<unknown>; account: string }>();
  let hadJobs = withJobs(deps.snapshot());

  const fingerprint = (agentId: string, kind: PollerKind): string => {
    try {
      return canonicalJson(resolveAccount(deps.snapshot(), agentId, kind));
    } catch {
      return '';
    }
  };

  const close = async (promises: Promise<unknown>[]) => {
    for (const p of promises) {
      try {
        const s = (await p) as { close?: () => unknown } | undefined;
        if (s && typeof s.close === 'function') await s.close();
      } catch (err) {
        logger.warn('poller shared resource failed to close', { reason: safeReason(err) });
      }
    }
  };

  return {
    get(agentId, kind) {
      if (!kind.createShared) return Promise.resolve(undefined);
      const key = keyOf(agentId, kind.kind);
      let entry = cache.get(key);
      if (!entry) {
        const account = resolveAccount(deps.snapshot(), agentId, kind);
        const create = kind.createShared.bind(kind);
        const promise = Promise.resolve().then(() =>
          create({
            agentId,
            account,
            http: pollerHttp(http, undefined, false),
            logger: logger.child({ agent: agentId, kind: kind.kind }),
          }),
        );
        // A failed build is forgotten: the next use tries again.
        promise.catch(() => {
          if (cache.get(key)?.promise === promise) cache.delete(key);
        });
        entry = { promise, account: canonicalJson(account) };
        cache.set(key, entry);
      }
      return entry.promise;
    },

    async dropAll() {
      const all = [...cache.values()].map((e) => e.promise);
      cache.clear();
      await close(all);
    },

    async dropChanged() {
      const stale: Promise<unknown>[] = [];
      for (const [key, entry] of cache) {
        const [agentId, kindName] = key.split('\u0000') as [string, string];
        const kind = registry.get(kindName);
        if (!kind || fingerprint(agentId, kind) !== entry.account) {
          cache.delete(key);
          stale.push(entry.promise);
        }
      }
      await close(stale);
    },

    async dropUnused() {
      const had = hadJobs;
      hadJobs = withJobs(deps.snapshot());
      const unused: Promise<unknown>[] = [];
      for (const key of had) {
        const entry = cache.get(key);
        if (entry && !hadJobs.has(key)) {
          cache.delete(key);
          unused.push(entry.promise);
        }
      }
      await close(unused);
    },
  };
}
