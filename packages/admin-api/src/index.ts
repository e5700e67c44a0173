export { createMetricsApp } from './metrics.js';
export { parseListen, serveApp, type ServedApp } from './serve.js';
