import type { RegistryContentType } from 'prom-client';
import { Registry } from './prom.js';
import type { RendersText } from './family.js';

function rendersText(metric: object): metric is RendersText {
  return typeof (metric as Partial<RendersText>).textPieces === 'function';
}

/**
 * The registry in the Prometheus text format 0.0.4, as `registry.metrics()` writes it: families that render
 * their own text (`TextCounter`, `TextGauge`, `TextHistogram`) write it, every other metric is rendered by
 * prom-client (`getSingleMetricAsString`). A registry set to OpenMetrics is left to prom-client whole.
 */
export async function renderMetrics(registry: Registry<RegistryContentType>): Promise<string> {
  if (registry.contentType !== Registry.PROMETHEUS_CONTENT_TYPE) return registry.metrics();
  const pieces: string[] = [];
  for (const part of await textParts(registry)) {
    if (typeof part === 'string') pieces.push(part);
    else for (const piece of part.textPieces()) pieces.push(piece);
  }
  return pieces.join('');
}

/**
 * `renderMetrics` as UTF-8 chunks of about 64 KB, each made when it is asked for: what a scrape sends,
 * pulled as the socket takes it. At 10,000 jobs the text is about 12 MB; made whole, as one string or as
 * every chunk at once, it outlived young collections and was left in the old generation at every scrape.
 * prom-client's metrics are rendered before the first chunk (a metric it cannot render fails the scrape
 * before its first byte); a text family's series are rendered as their chunk is made, each whole, with the
 * values of that moment: a scrape is not one instant (neither is prom-client's).
 */
export async function* renderMetricsChunks(
  registry: Registry<RegistryContentType>,
): AsyncGenerator<Buffer<ArrayBuffer>, void, undefined> {
  if (registry.contentType !== Registry.PROMETHEUS_CONTENT_TYPE) {
    yield Buffer.from(await registry.metrics(), 'utf8');
    return;
  }
  const parts = await textParts(registry);
  let pieces: string[] = [];
  let chars = 0;
  const take = (): Buffer<ArrayBuffer> => {
    const chunk = Buffer.from(pieces.join(''), 'utf8');
    pieces = [];
    chars = 0;
    return chunk;
  };
  for (const part of parts) {
    for (const piece of typeof part === 'string' ? [part] : part.textPieces()) {
      pieces.push(piece);
      chars += piece.length;
      if (chars >= CHUNK_CHARS) yield take();
    }
  }
  if (pieces.length > 0) yield take();
}

/**
 * Characters gathered before they are encoded (64 KB of ASCII): small enough to be a young string, large
 * enough to be few.
 */
const CHUNK_CHARS = 64 * 1024;

/**
 * The registry's parts in registration order, with the blank lines between them: a text family as itself
 * (its pieces are made when they are needed), every other metric as prom-client renders it, asked for now.
 */
async function textParts(registry: Registry<RegistryContentType>): Promise<(string | RendersText)[]> {
  const parts: (string | RendersText)[] = [];
  for (const metric of registry.getMetricsAsArray()) {
    if (parts.length > 0) parts.push('\n\n');
    parts.push(rendersText(metric) ? metric : await registry.getSingleMetricAsString(metric.name));
  }
  parts.push('\n');
  return parts;
}
