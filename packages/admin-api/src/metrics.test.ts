import { TextGauge } from '@agent/metrics-text';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildMetricsApp } from './metrics.js';
import { parseListen, serveApp } from './serve.js';

// What a scraper sends; a request without a Host is refused.
const scrape = { headers: { host: '127.0.0.1:9090' } };

describe('metrics app', () => {
  it('serves the registry in text exposition format', async () => {
    const registry = new Registry();
    new Counter({ name: 'x_total', help: 'x', registers: [registry] }).inc(3);
    const res = await buildMetricsApp(registry).request('/metrics', scrape);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toContain('x_total 3');
  });

  it("serves text families through their own rendering and prom-client's metrics through prom-client's", async () => {
    const registry = new Registry();
    new Counter({ name: 'x_total', help: 'x', registers: [registry] }).inc(3);
    const paused = new TextGauge({ name: 'p', help: 'p', labelNames: ['job_id'], registers: [registry] });
    paused.set({ job_id: 'j"1' }, 1);
    paused.set({ job_id: 'j2' }, Number.NaN);
    const text = await (await buildMetricsApp(registry).request('/metrics', scrape)).text();
    expect(text).toBe(
      '# HELP x_total x\n# TYPE x_total counter\nx_total 3\n\n# HELP p p\n# TYPE p gauge\np{job_id="j\\"1"} 1\np{job_id="j2"} NaN\n',
    );
    // prom-client, had it rendered the family, would have spelled the NaN "Nan": the family rendered itself.
    expect(await registry.metrics()).toBe(text.replace('NaN', 'Nan'));
  });

  it('is served on a free loopback port', async () => {
    const served = await serveApp(buildMetricsApp(new Registry()), { host: '127.0.0.1', port: 0 });
    try {
      expect(served.port).toBeGreaterThan(0);
      const res = await fetch(`${served.url}/metrics`);
      expect(res.status).toBe(200);
      expect((await fetch(`${served.url}/other`)).status).toBe(404);
    } finally {
      await served.close();
    }
  });

  it('answers /healthz always and /readyz only while ready', async () => {
    let ready = false;
    const app = buildMetricsApp(new Registry(), { ready: () => ready });
    expect((await app.request('/healthz', scrape)).status).toBe(200);
    const before = await app.request('/readyz', scrape);
    expect([before.status, await before.json()]).toEqual([503, { status: 'not ready' }]);
    ready = true;
    const after = await app.request('/readyz', scrape);
    expect([after.status, await after.json()]).toEqual([200, { status: 'ready' }]);
  });

  it('parses listen addresses', () => {
    expect(parseListen('127.0.0.1:9090')).toEqual({ host: '127.0.0.1', port: 9090 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(() => parseListen('9090')).toThrow(/host:port/);
  });
});
