/** The `/metrics` app: text exposition of a prom-client registry owned by the caller. */
import { Hono } from 'hono';
import type { Registry } from 'prom-client';

export function createMetricsApp(registry: Registry): Hono {
  const app = new Hono();
  app.get('/metrics', async (c) => {
    const body = await registry.metrics();
    return c.body(body, 200, { 'content-type': registry.contentType });
  });
  app.all('*', (c) =>
    c.json({ error: { code: 'NOT_FOUND', message: 'only GET /metrics is served here' } }, 404),
  );
  return app;
}
