/**
 * The metrics app: text exposition of a prom-client registry owned by the caller, plus the two probes a
 * supervisor asks (`/healthz`: the process answers; `/readyz`: it has started and is not stopping).
 */
import { renderMetricsChunks } from '@agent/metrics-text';
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { isAdminError, METRICS_ERROR_CODES, type MetricsErrorCode } from './errors.js';
import { checkHost, localEndOf } from './security.js';

export interface MetricsAppOptions {
  /** Whether the daemon is ready (started, not stopping); `/readyz` answers 503 otherwise. Default: always. */
  ready?: () => boolean;
  /**
   * Host names the listener answers to besides loopback names and the address a request came in on (the
   * host of `metrics.listen`, when it is a name).
   */
  hosts?: readonly string[];
}

/** The metrics app itself; `createMetricsApp` (lazy.ts) builds it at its first request. */
export function buildMetricsApp(registry: Registry, options: MetricsAppOptions = {}): Hono {
  const ready = options.ready ?? (() => true);
  const hosts = options.hosts ?? [];
  const app = new Hono();
  // The Host rule of the admin API: a DNS-rebinding page could otherwise read job and agent ids here.
  app.use('*', async (c, next) => {
    try {
      checkHost(c.req.raw.headers, localEndOf(c.env), hosts);
    } catch (err) {
      if (!isAdminError(err)) throw err;
      const code: MetricsErrorCode = 'HOST_NOT_ALLOWED';
      return c.json(
        {
          error: {
            code,
            message:
              "refused: the Host header names neither a loopback address nor this listener's address; scrape it by its IP address",
          },
        },
        METRICS_ERROR_CODES[code].status,
      );
    }
    await next();
  });
  app.get('/metrics', async (c) => {
    // Per-job series render their own text; prom-client renders the rest (process metrics, reload series).
    // Pulled as the socket takes it: one chunk of text is made at a time.
    const chunks = renderMetricsChunks(registry);
    // The first chunk before the status line: a registry that cannot be read still answers 500.
    let next = await chunks.next();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (next.done) return controller.close();
        controller.enqueue(next.value);
        next = await chunks.next();
      },
      async cancel() {
        await chunks.return();
      },
    });
    return c.body(body, 200, { 'content-type': registry.contentType });
  });
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => (ready() ? c.json({ status: 'ready' }) : c.json({ status: 'not ready' }, 503)));
  app.all('*', (c) => {
    const code: MetricsErrorCode = 'NOT_FOUND';
    return c.json(
      { error: { code, message: 'only GET /metrics, /healthz and /readyz are served here' } },
      METRICS_ERROR_CODES[code].status,
    );
  });
  return app;
}
