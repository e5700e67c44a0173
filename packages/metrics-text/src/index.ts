/**
 * @agent/metrics-text — labelled counters, gauges and histograms whose scrape stays cheap at tens of
 * thousands of series: label text escaped once per series, numbers in typed arrays, exposition text
 * written directly. They register in a prom-client `Registry` like its own metrics; `renderMetrics`
 * renders such a registry, `renderMetricsChunks` streams it in chunks made as they are asked for. prom-client's own classes and Node's process series come from here too, loaded
 * without the parts of prom-client a daemon never uses.
 */
export { TextCounter } from './counter.js';
export { TextGauge } from './gauge.js';
export { TextHistogram, type HistogramOptions } from './histogram.js';
export { renderMetrics, renderMetricsChunks } from './render.js';
export { SeriesIndex } from './series-index.js';
export type { FamilyOptions, FamilySnapshot, LabelValues, RendersText, SampleValue } from './family.js';
export { Counter, Gauge, Histogram, Registry } from './prom.js';
export { collectProcessMetrics } from './process-metrics.js';
