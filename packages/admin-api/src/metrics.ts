/**
 * The metrics app: text exposition of a prom-client registry owned by the caller, plus the two probes a
 * supervisor asks (`/healthz`: the process answers; `/readyz`: it has started and is not stopping).
 */
import { Hono } from 'hono';
import type { Registry } from 'prom-client';

export interface MetricsAppOptions {
  /** Whether the daemon is ready (started, not stopping); `/readyz` answers 503 otherwise. Default: always. */
  ready?: () => boolean;
}

export function createMetricsApp(registry: Registry, options: MetricsAppOptions = {}): Hono {
  const ready = options.ready ?? (() => true);
  const app = new Hono();
  app.get('/metrics', async (c) => {
    const body = await registry.metrics();
    return c.body(body, 200, { 'content-type': registry.contentType });
  });
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => (ready() ? c.json({ status: 'ready' }) : c.json({ status: 'not ready' }, 503)));
  app.all('*', (c) =>
    c.json(
      { error: { code: 'NOT_FOUND', message: 'only GET /metrics, /healthz and /readyz are served here' } },
      404,
    ),
  );
  return app;
}
