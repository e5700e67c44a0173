/** The series of cluster mode only (a single host never registers them): claims, held jobs, clock skew. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

type ClaimResult = 'claimed' | 'empty' | 'error' | 'untrusted';

export interface ClusterMetrics {
  /** `claimed` counts jobs; `empty`, `error` and `untrusted` count claim rounds. */
  claims(result: ClaimResult, n?: number): void;
  jobsHeld(n: number): void;
  claimLatency(ms: number): void;
  /** Database clock minus host clock (ms; exported in seconds). */
  clockSkew(ms: number): void;
}

const LATENCY_MS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000];

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
  return {
    claims: (result, n = 1) => claims.inc({ result }, n),
    jobsHeld: (n) => held.set(n),
    claimLatency: (ms) => latency.observe(ms),
    clockSkew: (ms) => skew.set(ms / 1000),
  };
}
