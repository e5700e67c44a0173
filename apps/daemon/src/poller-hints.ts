/**
 * Due hints between the daemons of a cluster, on NATS subject `agent.pollers.changed`: a daemon that made
 * jobs due (resume, reset, the end of a manual run, a reconcile, leases handed back or broken) says so, and
 * every other daemon's claim loop looks by the time named instead of at the end of its sleep. Hints are only
 * hints: PostgreSQL decides what is due and who holds it, and a lost hint (NATS down) costs the other
 * daemons at most their `claim.poll_max_ms` (plus its 10 % phase) of latency.
 */
import type { Broker } from '@agent/broker';
import type { Logger } from '@agent/log';
import type { DueHint, Runner } from '@agent/poller-runtime';

const POLLERS_CHANGED_SUBJECT = 'agent.pollers.changed';

/** Job ids a hint names at most: they are for people watching the subject; daemons use the time. */
const MAX_JOB_IDS = 16;

/** The payload, version 1. A daemon reads any version: what it cannot read of a newer one means "look now". */
export interface PollersChangedV1 {
  v: 1;
  /** The holder id of the daemon that sent it (`<daemon_id>#<incarnation>`). */
  from: string;
  /** The earliest due time of the jobs (database clock, ms since the epoch); `null`: now. */
  due_at: number | null;
  jobs: string[];
  /** How many more jobs were made due than `jobs` names. */
  more?: number;
}

export function hintPayload(from: string, hint: DueHint): PollersChangedV1 {
  const jobs = hint.jobIds.slice(0, MAX_JOB_IDS);
  const more = hint.jobIds.length - jobs.length;
  return { v: 1, from, due_at: hint.dueAt, jobs, ...(more > 0 ? { more } : {}) };
}

/**
 * What a received hint asks of this daemon: `null` to ignore it (its own, or not a hint), otherwise the time
 * to look by (`undefined`: now).
 */
export function readHint(data: unknown, self: string): { dueAt: number | undefined } | null {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  const { from, due_at: dueAt } = data as Record<string, unknown>;
  if (from === self) return null;
  return { dueAt: typeof dueAt === 'number' && Number.isFinite(dueAt) ? dueAt : undefined };
}

export interface PollerHints {
  /** Publishes a hint; never throws, never waits (a failure is logged at debug level). */
  announce(hint: DueHint): void;
  /** Wakes `runner` on every other daemon's hint; returns the unsubscribe. */
  follow(runner: Pick<Runner, 'wake'>): () => void;
}

export function createPollerHints(o: { broker: Broker; holderId: string; logger: Logger }): PollerHints {
  const { broker, holderId, logger } = o;
  return {
    announce(hint) {
      if (hint.jobIds.length === 0) return;
      broker
        .publish(POLLERS_CHANGED_SUBJECT, hintPayload(holderId, hint))
        .catch((err: Error) => logger.debug('poller due hint not sent', { err: err.message }));
    },
    follow(runner) {
      const sub = broker.subscribe(POLLERS_CHANGED_SUBJECT, (msg) => {
        const hint = readHint(msg.data, holderId);
        if (hint) runner.wake(hint.dueAt);
      });
      return () => sub.unsubscribe();
    },
  };
}
