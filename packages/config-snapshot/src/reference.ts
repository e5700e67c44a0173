/** Renders JSON Schemas as Markdown reference tables (the generated `docs/config/`). */
import {
  agentFileSchema,
  brokerFileSchema,
  llmFileSchema,
  memoryFileSchema,
  pluginFileSchema,
  runtimeFileSchema,
} from './schemas.js';

interface SchemaNode {
  type?: string | string[];
  description?: string;
  title?: string;
  default?: unknown;
  enum?: readonly unknown[];
  properties?: Record<string, SchemaNode>;
  additionalProperties?: boolean | SchemaNode;
  items?: SchemaNode;
  required?: readonly string[];
  oneOf?: readonly SchemaNode[];
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
}

export interface ReferenceEntry {
  /** Output file name, e.g. `llm.md`. */
  name: string;
  title: string;
  /** What the file is, shown under the title. */
  intro?: string;
  schema: object;
}

function typeOf(n: SchemaNode): string {
  if (n.enum) return n.enum.map((v) => `\`${JSON.stringify(v)}\``).join(' \\| ');
  if (n.oneOf) return 'one of (see below)';
  if (Array.isArray(n.type)) return n.type.join(' \\| ');
  if (n.type === 'array') return `list of ${n.items ? typeOf(n.items) : 'any'}`;
  if (
    n.type === 'object' &&
    n.additionalProperties &&
    typeof n.additionalProperties === 'object' &&
    !n.properties
  )
    return `map of ${typeOf(n.additionalProperties)}`;
  return n.type ?? 'any';
}

function constraints(n: SchemaNode): string {
  const parts: string[] = [];
  if (n.minimum !== undefined) parts.push(`>= ${n.minimum}`);
  if (n.maximum !== undefined) parts.push(`<= ${n.maximum}`);
  if (n.format) parts.push(n.format);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function rows(n: SchemaNode, path: string, required: boolean, out: string[]): void {
  if (path) {
    const def = n.default === undefined ? '' : `\`${JSON.stringify(n.default)}\``;
    out.push(
      `| \`${path}\` | ${typeOf(n)}${constraints(n)} | ${required ? 'yes' : ''} | ${def} | ${cell(n.description ?? '')} |`,
    );
  }
  if (n.properties) {
    for (const [k, child] of Object.entries(n.properties))
      rows(child, path ? `${path}.${k}` : k, n.required?.includes(k) ?? false, out);
  }
  if (
    n.additionalProperties &&
    typeof n.additionalProperties === 'object' &&
    (n.additionalProperties.properties || n.additionalProperties.oneOf)
  ) {
    rows(n.additionalProperties, `${path}.<name>`, false, out);
  }
  if (n.items && (n.items.properties || n.items.oneOf)) rows(n.items, `${path}[]`, false, out);
  if (n.oneOf) n.oneOf.forEach((b) => rows(b, path, false, out));
}

export function renderReference(entry: ReferenceEntry): string {
  const s = entry.schema as SchemaNode;
  const out = [`# ${entry.title}`, '', '<!-- Generated from the JSON Schemas; do not edit by hand. -->', ''];
  const intro = entry.intro ?? s.description;
  if (intro) out.push(intro, '');
  out.push('| field | type | required | default | notes |', '| --- | --- | --- | --- | --- |');
  rows(s, '', false, out);
  out.push('');
  return out.join('\n');
}

/** The files this package knows; the daemon adds channel and kind schemas. */
export const coreReferenceEntries: readonly ReferenceEntry[] = [
  { name: 'llm.md', title: 'llm.yaml', schema: llmFileSchema },
  { name: 'agent.md', title: 'agents.d/<agent_id>.yaml', schema: agentFileSchema },
  { name: 'runtime.md', title: 'runtime.yaml', schema: runtimeFileSchema },
  { name: 'broker.md', title: 'broker.yaml', schema: brokerFileSchema },
  { name: 'memory.md', title: 'memory.yaml', schema: memoryFileSchema },
  { name: 'plugins.md', title: 'plugins/<plugin>.yaml', schema: pluginFileSchema },
];
