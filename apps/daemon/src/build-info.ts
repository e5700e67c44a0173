/** `agent_build_info{version, node} 1`: which daemon version runs on which Node.js, Prometheus-style. */
import { Gauge } from '@agent/metrics-text';
import type { Registry } from 'prom-client';
import { DAEMON_VERSION } from './version.js';

export function registerBuildInfo(registry: Registry): void {
  new Gauge({
    name: 'agent_build_info',
    help: 'Always 1; the labels say which daemon version runs on which Node.js version.',
    labelNames: ['version', 'node'],
    registers: [registry],
  }).set({ version: DAEMON_VERSION, node: process.versions.node }, 1);
}
