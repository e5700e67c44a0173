/**
 * The admin and metrics apps as the daemon holds them: built at their first request. hono and the routes
 * (a few dozen modules) then load with it, not with the daemon: a start that nobody asks anything yet does
 * not wait for them.
 */
import type { Registry } from 'prom-client';
import type { AdminAppOptions } from './app.js';
import type { MetricsAppOptions } from './metrics.js';

/** An HTTP app: what `serveApp` serves and what a caller in the same process asks. */
export interface HttpApp {
  /** A Fetch API request to its answer; `env` is what the HTTP adapter binds (the socket). */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /** A request made in process, relative paths against a local origin (as `Hono.request` takes them). */
  request(input: string | URL | Request, init?: RequestInit, env?: unknown): Promise<Response>;
}

/** What answers HTTP requests: a built app (hono's) or an `HttpApp`. */
export interface Fetchable {
  fetch(request: Request, env?: unknown): Response | Promise<Response>;
}

interface FetchApp extends Fetchable {
  request(input: string | URL | Request, init?: RequestInit, env?: unknown): Response | Promise<Response>;
}

function lazyApp(build: () => Promise<FetchApp>): HttpApp {
  let app: Promise<FetchApp> | undefined;
  const built = () => (app ??= build());
  return {
    fetch: async (request, env) => (await built()).fetch(request, env),
    request: async (input, init, env) => (await built()).request(input, init, env),
  };
}

/** The loopback admin app (see `AdminAppOptions`), built at its first request. */
export function createAdminApp(options: AdminAppOptions): HttpApp {
  return lazyApp(async () => (await import('./app.js')).buildAdminApp(options));
}

/** The metrics app (`/metrics`, `/healthz`, `/readyz`) of `registry`, built at its first request. */
export function createMetricsApp(registry: Registry, options: MetricsAppOptions = {}): HttpApp {
  return lazyApp(async () => (await import('./metrics.js')).buildMetricsApp(registry, options));
}
