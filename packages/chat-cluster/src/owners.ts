/**
 * One owner per single-consumer channel instance across the daemons (e.g. the one `getUpdates` consumer
 * Telegram allows per bot). Each instance has a fenced lease `channel:<plugin>/<instance>` in
 * `cluster_leader` (`createLeaderElection`: the term is the fence); the daemon holding it runs the
 * instance's inbound side, and stops it when the term is lost, when no renewal succeeded within the local
 * trust window, or when the membership no longer trusts this daemon. `owner-decision.ts` decides; this
 * file carries the steps out, one start or stop at a time per side.
 */
import type { InboundOwnership, InboundSide } from '@agent/agent-runtime';
import { createLeaderElection, type LeaderElection, repeat, type Repeater } from '@agent/cluster';
import type { Logger } from '@agent/log';
import type { Pool } from '@agent/pg';
import type { OwnerFence } from './channel-state.js';
import { ChatClusterError } from './errors.js';
import { leaseStep, sideStep, startRetryMs, type OwnerView, type SidePhase } from './owner-decision.js';

export interface InboundOwnersOptions {
  pool: Pool;
  /** Schema of the cluster and chat tables (`migrateCluster`, `migrateChatCluster`). */
  schema: string;
  /** This daemon's holder id (`Membership.holderId`). */
  holderId: string;
  /** How long an owner term lasts without renewal (the failover time). Default 15 s. */
  ttlMs?: number;
  /** How often to renew or try to take over. Default a third of the TTL. */
  intervalMs?: number;
  logger: Logger;
  /** The membership's trust (`Membership.trusted`): while false, no campaigning and no side runs. */
  trusted?: () => boolean;
}

export interface InboundOwners {
  /** Campaigns for the side's instance and runs the side while this daemon owns it. */
  own(side: InboundSide): InboundOwnership;
  /**
   * The fence state writes of the instance carry: its lease and the term the running side started under
   * (term 0 while it does not run here, which no write passes). Null for an instance never given to `own`.
   */
  fence(plugin: string, instance: string): OwnerFence | null;
  /** `<plugin>/<instance>` of the sides running here now. */
  owned(): string[];
  /** Releases every ownership. */
  stop(): Promise<void>;
}

export const DEFAULT_OWNER_TTL_MS = 15_000;

/** The lease name of one instance. */
export function ownerResource(plugin: string, instance: string): string {
  return `channel:${plugin}/${instance}`;
}

interface Owner {
  readonly resource: string;
  /** The term the side started under while it starts or runs, else 0. */
  fenceTerm(): number;
  running(): boolean;
  released(): boolean;
  release(): Promise<void>;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export function createInboundOwners(o: InboundOwnersOptions): InboundOwners {
  const ttlMs = o.ttlMs ?? DEFAULT_OWNER_TTL_MS;
  const intervalMs = o.intervalMs ?? Math.max(100, Math.round(ttlMs / 3));
  const trusted = o.trusted ?? (() => true);
  const owners = new Map<string, Owner>();

  const ownOne = (side: InboundSide): Owner => {
    const resource = ownerResource(side.plugin, side.instance);
    const fields = { plugin: side.plugin, instance: side.instance };
    const election: LeaderElection = createLeaderElection({
      pool: o.pool,
      schema: o.schema,
      name: resource,
      holderId: o.holderId,
      ttlMs,
      intervalMs,
      onError: (err) => o.logger.warn('channel owner lease round failed', { ...fields, error: err.message }),
    });
    let phase: SidePhase = 'stopped';
    let term = 0;
    let released = false;
    let failures = 0;
    let retryAt = -Infinity;
    let inRound = false;
    let lostBy: OwnerView['lostBy'] = 'term lost';
    const view = (): OwnerView => ({
      released,
      trusted: trusted(),
      held: election.isLeader(),
      lostBy,
      side: phase,
      backingOff: performance.now() < retryAt,
    });

    // The side's starts and stops, one at a time: `kick` asks for a fresh decision after whatever runs.
    let dirty = false;
    let driving: Promise<void> | undefined;
    const kick = (): Promise<void> => {
      dirty = true;
      driving ??= (async () => {
        while (dirty) {
          dirty = false;
          // A bug guard: a failing step must neither wedge the side's driver nor reject unheard.
          await step().catch((err: unknown) =>
            o.logger.error('channel owner step failed', { ...fields, error: message(err) }),
          );
        }
        driving = undefined;
      })();
      return driving;
    };
    const step = async (): Promise<void> => {
      const next = sideStep(view());
      if (next.kind === 'none') return;
      dirty = true;
      if (next.kind === 'start') {
        phase = 'starting';
        term = election.term();
        o.logger.info('channel owner acquired', { ...fields, term });
        try {
          await side.start();
          phase = 'running';
          failures = 0;
        } catch (err) {
          failures += 1;
          const retryMs = startRetryMs(failures, intervalMs);
          retryAt = performance.now() + retryMs;
          o.logger.error('channel owner start failed', {
            ...fields,
            term,
            error: message(err),
            retry_in_ms: retryMs,
          });
          // Whatever the failed start left running goes; then the term goes, so another daemon may try.
          await Promise.resolve()
            .then(() => side.stop())
            .catch((stopErr: unknown) =>
              o.logger.warn('channel owner cleanup after a failed start failed', {
                ...fields,
                error: message(stopErr),
              }),
            );
          phase = 'stopped';
          term = 0;
          void lease.runNow();
        }
        return;
      }
      phase = 'stopping';
      try {
        await side.stop();
      } catch (err) {
        o.logger.error('channel owner stop failed', { ...fields, term, error: message(err) });
      }
      o.logger[next.reason === 'released' ? 'info' : 'warn']('channel owner lost', {
        ...fields,
        term,
        reason: next.reason,
      });
      phase = 'stopped';
      term = 0;
      // An untrusted daemon gives its term up now rather than at the next round.
      if (!released) void lease.runNow();
    };

    election.onChange((isLeader) => {
      // A loss seen by a renewal is the term's end; one between renewals is the trust window running out.
      if (!isLeader) lostBy = inRound ? 'term lost' : 'trust window expired';
      void kick();
    });
    const round = async (): Promise<void> => {
      const next = leaseStep(view());
      if (next === 'campaign') {
        inRound = true;
        try {
          await election.campaign();
        } finally {
          inRound = false;
        }
      } else if (next === 'give-up') await election.stop();
      // Trust is read here, once a round: an untrusted daemon stops its side within one interval.
      void kick();
    };
    const lease: Repeater = repeat(intervalMs, round);
    void lease.runNow();

    let releasing: Promise<void> | undefined;
    return {
      resource,
      fenceTerm: () => term,
      running: () => phase === 'running',
      released: () => released,
      release: () =>
        (releasing ??= (async () => {
          released = true;
          await lease.stop();
          await kick();
          // Gives the term up at once: the next candidate need not wait for the TTL.
          await election.stop();
        })()),
    };
  };

  return {
    own(side) {
      const key = `${side.plugin}/${side.instance}`;
      if (owners.get(key)?.released() === false)
        throw new ChatClusterError('CHAT_OWNER_DUPLICATE', `${key} is already owned here`);
      const owner = ownOne(side);
      owners.set(key, owner);
      return { release: () => owner.release() };
    },
    fence(plugin, instance) {
      const owner = owners.get(`${plugin}/${instance}`);
      return owner ? { resource: owner.resource, term: owner.fenceTerm() } : null;
    },
    owned: () => [...owners].filter(([, owner]) => owner.running()).map(([key]) => key),
    async stop() {
      await Promise.all([...owners.values()].map((owner) => owner.release()));
    },
  };
}
