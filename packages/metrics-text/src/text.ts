/** Pieces of the Prometheus text format 0.0.4, spelled as prom-client 15 spells them. */

const NEEDS_ESCAPE = /[\\"\n]/;

/** A label value inside its double quotes: backslash, double quote and newline escaped. */
export function escapeLabelValue(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** HELP text: backslash and newline escaped (a double quote stays). */
function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/**
 * A sample value. Go's ParseFloat reads JavaScript's number text (`1e+21` included); the three specials
 * are spelled as the format names them.
 */
export function formatValue(value: number): string {
  if (Number.isFinite(value)) return `${value}`;
  if (Number.isNaN(value)) return 'NaN';
  return value > 0 ? '+Inf' : '-Inf';
}

export type MetricKind = 'counter' | 'gauge' | 'histogram';

/** The HELP and TYPE lines of a family, without a trailing newline. */
export function headerOf(name: string, help: string, kind: MetricKind): string {
  return `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${kind}`;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function checkNames(name: string, help: string, labelNames: readonly string[]): void {
  if (!METRIC_NAME.test(name)) throw new TypeError(`invalid metric name "${name}"`);
  if (!help) throw new TypeError(`metric ${name} has no help text`);
  for (const label of labelNames) {
    if (!LABEL_NAME.test(label) || label.startsWith('__')) {
      throw new TypeError(`metric ${name}: invalid label name "${label}"`);
    }
  }
  if (new Set(labelNames).size !== labelNames.length) {
    throw new TypeError(`metric ${name}: a label name is repeated`);
  }
}
