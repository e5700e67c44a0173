/**
 * A pure diff of two configurations that names every changed field and classifies it as hot (applied by
 * a reload) or restart-required (spec §4.2: agents added or removed, plugin instance blocks, broker.yaml,
 * memory.yaml, an agent's workspace, skills_dir and transcripts_dir).
 */
import type { AgentFile, BrokerFile, LlmFile, MemoryFile, RuntimeFile } from './schemas.js';
import type { PluginSnapshot } from './snapshot.js';
import { formatPath } from './issues.js';

export type ChangeClass = 'hot' | 'restart';

export interface FieldChange {
  field: string;
  class: ChangeClass;
  /** A restart-required change: its YAML path in its file (the agent's file, or the file `field` names). */
  path?: readonly (string | number)[];
}

export interface AgentDiff {
  agentId: string;
  /**
   * `rejected`: the file is there but invalid (the agent keeps its running definition, no restart);
   * `joined`: a file that was invalid since boot is valid now (applied by the reload, no restart).
   */
  status: 'added' | 'removed' | 'rejected' | 'joined' | 'changed' | 'unchanged';
  changes: FieldChange[];
}

export interface SnapshotDiff {
  agents: AgentDiff[];
  /** Changes outside agent files (broker.yaml, memory.yaml, runtime.yaml, plugin files). */
  global: FieldChange[];
}

/** The parts of a configuration the diff reads; both snapshots and freshly read candidates have them. */
export interface DiffInput {
  agents: ReadonlyMap<
    string,
    { definition: Readonly<AgentFile>; workspace: string; skillsDir: string; transcriptsDir: string }
  >;
  llm: Readonly<LlmFile>;
  broker: Readonly<BrokerFile>;
  memory: Readonly<MemoryFile>;
  runtime: Readonly<RuntimeFile>;
  plugins: ReadonlyMap<string, PluginSnapshot>;
  /** Agents whose file exists but is invalid; a rejected agent is never "removed". */
  invalidAgents?: ReadonlyMap<string, unknown>;
}

/** Agent fields that need the agent restarted. */
export const RESTART_AGENT_FIELDS = ['workspace', 'skills_dir', 'transcripts_dir'] as const;
/** runtime.yaml sections that need the daemon restarted (listeners and the data directory). */
export const RESTART_RUNTIME_FIELDS = ['data_dir', 'metrics', 'admin'] as const;

export function diff(prev: DiffInput, next: DiffInput): SnapshotDiff {
  const ids = [...new Set([...prev.agents.keys(), ...next.agents.keys()])].sort();
  const agents: AgentDiff[] = ids.map((agentId) => {
    const a = prev.agents.get(agentId);
    const b = next.agents.get(agentId);
    if (!a && prev.invalidAgents?.has(agentId)) return { agentId, status: 'joined', changes: [] };
    if (!a)
      return { agentId, status: 'added', changes: [{ field: 'agent added', class: 'restart', path: [] }] };
    if (!b && next.invalidAgents?.has(agentId)) return { agentId, status: 'rejected', changes: [] };
    if (!b)
      return {
        agentId,
        status: 'removed',
        changes: [{ field: 'agent removed', class: 'restart', path: [] }],
      };
    const changes: FieldChange[] = [];
    const restart = new Set<string>(RESTART_AGENT_FIELDS);
    const { workspace: _w1, skills_dir: _s1, transcripts_dir: _t1, ...defA } = a.definition;
    const { workspace: _w2, skills_dir: _s2, transcripts_dir: _t2, ...defB } = b.definition;
    for (const field of changedPaths(defA, defB)) changes.push({ field, class: 'hot' });
    // Compare the resolved directories, so that spelling a default out is not a change.
    const dirs = [
      ['workspace', a.workspace, b.workspace],
      ['skills_dir', a.skillsDir, b.skillsDir],
      ['transcripts_dir', a.transcriptsDir, b.transcriptsDir],
    ] as const;
    for (const [field, was, now] of dirs)
      if (was !== now) changes.push({ field, class: 'restart', path: [field] });
    // A provider change reaches every agent that uses the provider (rotated key, moved base_url).
    const pa = prev.llm.providers[b.definition.model.provider];
    const pb = next.llm.providers[b.definition.model.provider];
    if (a.definition.model.provider === b.definition.model.provider) {
      for (const f of changedPaths(pa ?? {}, pb ?? {})) {
        changes.push({
          field: `llm.providers.${b.definition.model.provider}${f ? '.' + f : ''}`,
          class: 'hot',
        });
      }
    }
    changes.sort(
      (x, y) => Number(restart.has(y.field)) - Number(restart.has(x.field)) || x.field.localeCompare(y.field),
    );
    return { agentId, status: changes.length ? 'changed' : 'unchanged', changes };
  });

  const global: FieldChange[] = [];
  for (const path of changedSegments(prev.broker, next.broker))
    global.push({ field: `broker.yaml ${formatPath(path)}`, class: 'restart', path });
  for (const path of changedSegments(prev.memory, next.memory))
    global.push({ field: `memory.yaml ${formatPath(path)}`, class: 'restart', path });
  for (const path of changedSegments(prev.runtime, next.runtime)) {
    const restart = (RESTART_RUNTIME_FIELDS as readonly unknown[]).includes(path[0]);
    global.push({
      field: `runtime.yaml ${formatPath(path)}`,
      ...(restart ? { class: 'restart', path } : { class: 'hot' }),
    });
  }
  const plugins = [...new Set([...prev.plugins.keys(), ...next.plugins.keys()])].sort();
  for (const name of plugins) {
    const a = prev.plugins.get(name);
    const b = next.plugins.get(name);
    const instances = [
      ...new Set([...Object.keys(a?.rawInstances ?? {}), ...Object.keys(b?.rawInstances ?? {})]),
    ].sort();
    for (const inst of instances) {
      const ra = a?.rawInstances[inst];
      const rb = b?.rawInstances[inst];
      const field = `plugins/${name}.yaml instances.${inst}`;
      if (!sameValue(ra, rb)) global.push({ field, class: 'restart', path: ['instances', inst] });
      else if (!sameValue(a?.instances[inst], b?.instances[inst]))
        global.push({ field: `${field} (credentials)`, class: 'hot' });
    }
    for (const f of changedPaths(a?.accounts ?? {}, b?.accounts ?? {}))
      global.push({ field: `plugins/${name}.yaml accounts.${f}`, class: 'hot' });
  }
  return { agents, global };
}

/** All restart-required changes, one entry per field, with its YAML path in its file (see `FieldChange`). */
export function restartRequiredChanges(
  d: SnapshotDiff,
): { agentId?: string; field: string; path: readonly (string | number)[] }[] {
  const out: { agentId?: string; field: string; path: readonly (string | number)[] }[] = [];
  for (const a of d.agents)
    for (const c of a.changes)
      if (c.class === 'restart') out.push({ agentId: a.agentId, field: c.field, path: c.path ?? [] });
  for (const c of d.global) if (c.class === 'restart') out.push({ field: c.field, path: c.path ?? [] });
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Paths of the leaves that differ; arrays of objects are compared element by element. */
export function changedPaths(a: unknown, b: unknown, base: (string | number)[] = []): string[] {
  return changedSegments(a, b, base).map(formatPath);
}

function changedSegments(a: unknown, b: unknown, base: (string | number)[] = []): (string | number)[][] {
  if (sameValue(a, b)) return [];
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => changedSegments(a[k], b[k], [...base, k]));
  }
  if (Array.isArray(a) && Array.isArray(b) && [...a, ...b].some(isPlainObject)) {
    const n = Math.max(a.length, b.length);
    const out: (string | number)[][] = [];
    for (let i = 0; i < n; i++) out.push(...changedSegments(a[i], b[i], [...base, i]));
    return out;
  }
  return [base];
}

/** Why a restart-required change waits for the restart (what the running daemon keeps meanwhile). */
export function restartReason(change: { agentId?: string; field: string }): string {
  const { agentId, field } = change;
  if (agentId !== undefined) {
    if (field === 'agent added') return 'agents start with the daemon: this one runs after a restart';
    if (field === 'agent removed') return 'the agent keeps running until the daemon restarts';
    return `the agent keeps its running ${field} until the daemon restarts`;
  }
  const file = field.split(' ')[0]!;
  if (file.startsWith('plugins/'))
    return 'channel instances start with the daemon: the running block stays until it restarts';
  if (file === 'runtime.yaml')
    return 'listeners and the data directory are set up at start: the running ones stay until the daemon restarts';
  return `${file} is read at start: the running settings stay until the daemon restarts`;
}

export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => sameValue(a[k], b[k]));
  }
  return false;
}
