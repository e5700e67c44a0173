/**
 * The series of cluster mode only (a single host never registers them): claims, held jobs, clock skew, tick
 * lateness.
 */
import { Counter, Gauge, Histogram } from '@agent/metrics-text';
import type { Registry } from 'prom-client';

type ClaimResult = 'claimed' | 'empty' | 'error' | 'untrusted';

export interface ClusterMetrics {
  /** `claimed` counts jobs; `empty`, `error` and `untrusted` count claim rounds. */
  claims(result: ClaimResult, n?: number): void;
  jobsHeld(n: number): void;
  claimLatency(ms: number): void;
  /** Database clock minus host clock (ms; exported in seconds). */
  clockSkew(ms: number): void;
  /** A claimed tick's start minus its slot (`next_run_at`, jitter included), database clock (ms). */
  tickLateness(ms: number): void;
}

const LATENCY_MS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000];
const LATENESS_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300];

function once<T>(
  registry: Registry,
  name: string,
  make: (base: { name: string; registers: Registry[] }) => T,
): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make({ name, registers: [registry] });
}

export function createClusterMetrics(registry: Registry): ClusterMetrics {
  const claims = once(
    registry,
    'poller_claims_total',
    (m) =>
      new Counter({
        ...m,
        help: 'Claim loop: jobs claimed (result="claimed"), and rounds that claimed nothing, failed, or were skipped while this daemon could not heartbeat.',
        labelNames: ['result'] as const,
      }),
  );
  const held = once(
    registry,
    'poller_jobs_held',
    (m) => new Gauge({ ...m, help: 'Jobs whose lease this daemon holds for a running tick.' }),
  );
  const latency = once(
    registry,
    'poller_claim_latency_ms',
    (m) => new Histogram({ ...m, help: 'Duration of one claim query in milliseconds.', buckets: LATENCY_MS }),
  );
  const skew = once(
    registry,
    'poller_clock_skew_seconds',
    (m) =>
      new Gauge({ ...m, help: 'Database clock minus this host clock, measured at every claim (seconds).' }),
  );
  const lateness = once(
    registry,
    'poller_tick_lateness_seconds',
    (m) =>
      new Histogram({
        ...m,
        help: 'How late claimed ticks start: start minus the slot they were due at (jitter included), on the database clock.',
        buckets: LATENESS_SECONDS,
      }),
  );
  return {
    claims: (result, n = 1) => claims.inc({ result }, n),
    jobsHeld: (n) => held.set(n),
    claimLatency: (ms) => latency.observe(ms),
    clockSkew: (ms) => skew.set(ms / 1000),
    // A start a few ms before the slot is the skew estimate's error, not a tick run early: it counts as 0.
    tickLateness: (ms) => lateness.observe(Math.max(0, ms) / 1000),
  };
}
