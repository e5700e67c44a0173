/**
 * Node's process metrics (`process_*`, `nodejs_*`): the series prom-client's `collectDefaultMetrics` makes,
 * by its own collectors, but for CPU time. prom-client's CPU collector loads OpenTelemetry's API for
 * exemplars, which these counters never carry: here they are three counters with the same names, help and
 * values.
 */
import { createRequire } from 'node:module';
import type { Registry as PromRegistry } from 'prom-client';
import { Counter } from './prom.js';

const load = createRequire(import.meta.url);

type Collector = (registry: PromRegistry, config: Record<string, unknown>) => void;

/** prom-client's default collectors, in its order, without `processCpuTotal`. */
const COLLECTORS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  ...(typeof process.getActiveResourcesInfo === 'function' ? ['processResources'] : []),
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
];

/** Registers the process series on `registry`, as `collectDefaultMetrics({ register: registry })` does. */
export function collectProcessMetrics(registry: PromRegistry): void {
  cpuCounters(registry);
  // prom-client's own default: event loop delay sampled every 10 ms.
  const config = { eventLoopMonitoringPrecision: 10 };
  for (const name of COLLECTORS) (load(`prom-client/lib/metrics/${name}`) as Collector)(registry, config);
}

function cpuCounters(registry: PromRegistry): void {
  let last = process.cpuUsage();
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers: [registry],
    // One collect sets all three, as prom-client's does.
    collect() {
      const now = process.cpuUsage();
      const userMicros = now.user - last.user;
      const systemMicros = now.system - last.system;
      last = now;
      user.inc(userMicros / 1e6);
      system.inc(systemMicros / 1e6);
      total.inc((userMicros + systemMicros) / 1e6);
    },
  });
  const system = new Counter({
    name: 'process_cpu_system_seconds_total',
    help: 'Total system CPU time spent in seconds.',
    registers: [registry],
  });
  const total = new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    registers: [registry],
  });
}
