/**
 * The process series against prom-client's `collectDefaultMetrics`: the same families (names, help, types,
 * label names), and CPU counters that count this process's CPU time.
 */
import * as prom from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Counter, Gauge, Histogram, Registry, collectProcessMetrics } from './index.js';

const shape = async (registry: prom.Registry) =>
  (await registry.getMetricsAsJSON())
    .map((m) => ({
      name: m.name,
      help: m.help,
      type: m.type,
      labels: [...new Set(m.values.flatMap((v) => Object.keys(v.labels)))].sort(),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));

describe('collectProcessMetrics', () => {
  it("registers the families prom-client's collectDefaultMetrics does, with the same help, types and labels", async () => {
    const theirs = new prom.Registry();
    prom.collectDefaultMetrics({ register: theirs });
    const ours = new Registry();
    collectProcessMetrics(ours);
    const expected = await shape(theirs);
    expect(expected.length).toBeGreaterThan(20);
    expect(await shape(ours)).toEqual(expected);
  });

  it('counts the CPU time of the process, user plus system in the total', async () => {
    const registry = new Registry();
    collectProcessMetrics(registry);
    const value = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]!.value;
    await value('process_cpu_user_seconds_total');
    const spinUntil = Date.now() + 30;
    while (Date.now() < spinUntil);
    const user = await value('process_cpu_user_seconds_total');
    const system = await value('process_cpu_system_seconds_total');
    const total = await value('process_cpu_seconds_total');
    expect(user).toBeGreaterThan(0.01);
    expect(total).toBeCloseTo(user + system, 6);
  });

  it("hands out prom-client's own classes: metrics made either way share a registry", async () => {
    expect(Registry).toBe(prom.Registry);
    expect(Counter).toBe(prom.Counter);
    expect(Gauge).toBe(prom.Gauge);
    expect(Histogram).toBe(prom.Histogram);
  });
});
