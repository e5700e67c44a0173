import type { RegistryContentType } from 'prom-client';
import { Registry } from './prom.js';
import type { RendersText } from './family.js';

function rendersText(metric: object): metric is RendersText {
  return typeof (metric as Partial<RendersText>).renderText === 'function';
}

/**
 * The registry in the Prometheus text format 0.0.4, as `registry.metrics()` writes it: families that render
 * their own text (`TextCounter`, `TextGauge`, `TextHistogram`) write it, every other metric is rendered by
 * prom-client (`getSingleMetricAsString`). A registry set to OpenMetrics is left to prom-client whole.
 */
export async function renderMetrics(registry: Registry<RegistryContentType>): Promise<string> {
  if (registry.contentType !== Registry.PROMETHEUS_CONTENT_TYPE) return registry.metrics();
  const blocks: string[] = [];
  for (const metric of registry.getMetricsAsArray()) {
    blocks.push(
      rendersText(metric) ? metric.renderText() : await registry.getSingleMetricAsString(metric.name),
    );
  }
  return `${blocks.join('\n\n')}\n`;
}
