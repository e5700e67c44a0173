/**
 * prom-client's metric classes, loaded from their own modules. Its index also loads the push gateway (with
 * Node's HTTP, HTTPS and zlib), the cluster aggregator, summaries with their digest and the default process
 * metrics with OpenTelemetry's API: most of what `import 'prom-client'` costs a daemon's start. The classes
 * are the very ones the index exports (one module each), so a `Registry` made either way takes the other's
 * metrics.
 */
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const load = createRequire(import.meta.url);

export const Registry = load('prom-client/lib/registry') as typeof PromClient.Registry;
export type Registry<T extends PromClient.RegistryContentType = PromClient.PrometheusContentType> =
  PromClient.Registry<T>;
export const Counter = load('prom-client/lib/counter') as typeof PromClient.Counter;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export const Gauge = load('prom-client/lib/gauge') as typeof PromClient.Gauge;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export const Histogram = load('prom-client/lib/histogram') as typeof PromClient.Histogram;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;
