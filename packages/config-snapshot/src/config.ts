/**
 * `loadConfig`: read the directory, validate each part on its own, and — on a reload — merge with the
 * previous snapshot: valid agents move to the next version, invalid ones keep their previous definition,
 * restart-required changes are reported and not applied.
 */
import { sleep } from '@agent/timers';
import type { ConfigIssue } from './issues.js';
import { formatIssue } from './issues.js';
import { readCandidate, type Candidate, type ReadOptions } from './load.js';
import { nearestPosition, type SourceFile } from './source.js';
import { join } from 'node:path';
import {
  diff,
  restartReason,
  restartRequiredChanges,
  RESTART_RUNTIME_FIELDS,
  sameValue,
  type SnapshotDiff,
} from './diff.js';
import type { ProviderConfig, RuntimeFile } from './schemas.js';
import {
  deepFreeze,
  makeRedactor,
  type AgentSnapshot,
  type ConfigSnapshot,
  type PluginSnapshot,
} from './snapshot.js';

export interface LoadOptions extends ReadOptions {
  /** The running snapshot, when this load is a reload. */
  previous?: ConfigSnapshot | null;
  /**
   * The version of the new snapshot, when the caller numbers them (cluster mode: the config bundle's, the
   * same on every daemon); it must be above the previous one. Default: 1 at boot, then previous + 1. A load
   * of another version is never `unchanged`, even with the same bytes.
   */
  version?: number;
}

export interface RejectedAgent {
  agentId: string;
  /** One line naming file, YAML path and line of the first problem. */
  reason: string;
  issues: ConfigIssue[];
}

/** A change not applied because it needs a restart: why, and where it is written. */
export interface RestartChange {
  agentId?: string;
  field: string;
  /** What the running daemon keeps until it restarts. */
  reason: string;
  /** The file of the change (as issues name files); absent when no file names it. */
  file?: string;
  /**
   * The line of the changed key in `file`; for a removed key, of the nearest key around it still there (none
   * for a removed top-level key or file).
   */
  line?: number;
}

export interface LoadResult {
  /** The new snapshot; `null` when nothing can be applied (a global file is invalid, or every agent was rejected). */
  snapshot: ConfigSnapshot | null;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
  /** Agents moved to the new version. */
  applied: string[];
  rejected: RejectedAgent[];
  /** Changes that were not applied because they need a restart. */
  restartRequired: RestartChange[];
  /** `null` at boot. */
  diff: SnapshotDiff | null;
  /** Every file and secret read is byte-for-byte what the previous snapshot was built from. */
  unchanged: boolean;
  /** Hash of what this load read, whether or not it applied (`''` when it failed outright). */
  contentHash: string;
  /** Every file named by `${file:}` in what this load read, resolved or not: the files to watch. */
  secretFiles: string[];
}

const secretsOf = new WeakMap<ConfigSnapshot, ReadonlySet<string>>();

/** How `loadConfigWhenQuiet` waits for files being saved. */
export interface QuietReadOptions {
  /** A file changed less than this before the read is not parsed yet. Default 200 ms. */
  quietMs?: number;
  /** The longest wait; a file still changing then is reported as `CONFIG_FILE_CHANGING`. Default 2000 ms. */
  maxWaitMs?: number;
  /** Wall clock (file change times are wall-clock). Default `Date.now`. */
  now?: () => number;
  /** Waits between reads. Default `sleep` of `@agent/timers`. */
  sleep?: (ms: number) => Promise<unknown>;
}

export const DEFAULT_QUIET_MS = 200;
export const DEFAULT_QUIET_MAX_WAIT_MS = 2000;
const QUIET_POLL_MS = 50;

/**
 * `loadConfig` for an explicit reload, which (unlike the watcher) may come in the middle of a save: no file is
 * parsed until it has been quiet for `quietMs` (no change of its ctime). A file written in place in two
 * halves with a pause between them is then read whole; so is a file renamed over, and one changing during the
 * read is read again (see `readYamlFile`). Reads again every 50 ms until every file is quiet or `maxWaitMs`
 * passed; files still changing by then are `CONFIG_FILE_CHANGING` errors and keep their running definitions.
 */
export async function loadConfigWhenQuiet(
  configDir: string,
  opts: LoadOptions & QuietReadOptions = {},
): Promise<LoadResult> {
  const { quietMs = DEFAULT_QUIET_MS, maxWaitMs = DEFAULT_QUIET_MAX_WAIT_MS, now = Date.now } = opts;
  const wait = opts.sleep ?? ((ms: number) => sleep(ms));
  const deadline = now() + maxWaitMs;
  for (;;) {
    const result = loadConfig(configDir, { ...opts, settledBefore: now() - quietMs });
    const left = deadline - now();
    if (left <= 0 || !result.errors.some((e) => e.code === 'CONFIG_FILE_CHANGING')) return result;
    await wait(Math.min(left, QUIET_POLL_MS));
  }
}

/** Never throws: every problem is in `errors` or `warnings`. */
export function loadConfig(configDir: string, opts: LoadOptions = {}): LoadResult {
  let candidate: Candidate;
  try {
    candidate = readCandidate(configDir, opts);
  } catch (err) {
    // A bug must not take a running daemon down: report it as an issue.
    const issue: ConfigIssue = {
      code: 'CONFIG_FILE_UNREADABLE',
      severity: 'error',
      scope: 'global',
      file: configDir,
      path: '',
      message: `unexpected error while reading the config: ${(err as Error).message}`,
    };
    return {
      snapshot: null,
      errors: [issue],
      warnings: [],
      applied: [],
      rejected: [],
      restartRequired: [],
      diff: null,
      unchanged: false,
      contentHash: '',
      secretFiles: [],
    };
  }
  const read = { contentHash: candidate.contentHash, secretFiles: candidate.secretFiles };
  const errors = candidate.issues.filter((i) => i.severity === 'error');
  const warnings = candidate.issues.filter((i) => i.severity === 'warning');
  const prev = opts.previous ?? null;
  const unchanged =
    prev !== null &&
    prev.contentHash === candidate.contentHash &&
    (opts.version === undefined || opts.version === prev.version);
  const rejected: RejectedAgent[] = [...candidate.rejectedAgents].map(([agentId, issues]) => ({
    agentId,
    reason: issues[0] ? formatIssue(issues[0]) : 'invalid',
    issues,
  }));

  if (candidate.fatal) {
    // A global file blocks everything; the agents are not to blame, so none is listed as rejected.
    return {
      snapshot: null,
      errors,
      warnings,
      applied: [],
      rejected: [],
      restartRequired: [],
      diff: null,
      unchanged,
      ...read,
    };
  }

  if (!prev) {
    const first = opts.version ?? 1;
    const snapshot = build(
      candidate,
      first,
      new Map([...candidate.agents].map(([id, a]) => [id, { ...a, version: first }])),
      {
        invalidAgents: new Map(rejected.map((r) => [r.agentId, r.reason])),
        llm: candidate.llm.providers,
        runtime: candidate.runtime,
        broker: candidate.broker,
        memory: candidate.memory,
        plugins: candidate.plugins,
        sections: sectionValues(candidate, null),
        secrets: candidate.secrets,
        secretFiles: candidate.secretFiles,
      },
    );
    return {
      snapshot,
      errors,
      warnings,
      applied: [...candidate.agents.keys()].sort(),
      rejected,
      restartRequired: [],
      diff: null,
      unchanged: false,
      ...read,
    };
  }

  const d = diff(prev, { ...candidate, invalidAgents: candidate.rejectedAgents });
  // An agent whose file was there all along but invalid joins now: it is not an added agent.
  const runsOrJoins = (id: string) => prev.agents.has(id) || prev.invalidAgents.has(id);
  const applied = [...candidate.agents.keys()].filter(runsOrJoins).sort();
  const noAgentsAnywhere = prev.agents.size === 0 && candidate.agents.size === 0 && rejected.length === 0;
  if (applied.length === 0 && !noAgentsAnywhere) {
    return {
      snapshot: null,
      errors,
      warnings,
      applied,
      rejected,
      restartRequired: restartChanges(d, prev, candidate),
      diff: d,
      unchanged,
      ...read,
    };
  }
  const version = opts.version ?? prev.version + 1;

  const agents = new Map<string, AgentSnapshot>();
  for (const id of applied)
    if (!prev.agents.has(id)) agents.set(id, { ...candidate.agents.get(id)!, version });
  for (const [id, old] of prev.agents) {
    const fresh = candidate.agents.get(id);
    if (!fresh) {
      agents.set(id, old); // rejected or removed: keeps its previous definition
      continue;
    }
    // Restart-required fields keep their running values.
    const definition = { ...fresh.definition };
    for (const k of ['workspace', 'skills_dir', 'transcripts_dir'] as const) {
      if (old.definition[k] === undefined) delete definition[k];
      else definition[k] = old.definition[k];
    }
    agents.set(id, {
      ...fresh,
      definition,
      workspace: old.workspace,
      skillsDir: old.skillsDir,
      transcriptsDir: old.transcriptsDir,
      version,
    });
  }

  // Providers: the new ones, plus any old one an agent still running on its old definition needs.
  const providers: Record<string, ProviderConfig> = { ...candidate.llm.providers };
  for (const a of agents.values()) {
    const name = a.definition.model.provider;
    if (a.version !== version && !providers[name] && prev.llm.providers[name])
      providers[name] = prev.llm.providers[name] as ProviderConfig;
  }

  // runtime.yaml: hot sections from the new file, listeners and data_dir as running.
  const runtime = { ...candidate.runtime } as Record<string, unknown>;
  for (const k of RESTART_RUNTIME_FIELDS) runtime[k] = (prev.runtime as Record<string, unknown>)[k];

  // Plugins: an instance block keeps running as it is unless only its resolved secrets changed.
  const plugins = new Map<string, PluginSnapshot>();
  for (const name of new Set([...prev.plugins.keys(), ...candidate.plugins.keys()])) {
    const a = prev.plugins.get(name);
    const b = candidate.plugins.get(name);
    const instances: Record<string, Readonly<Record<string, unknown>>> = {};
    const rawInstances: Record<string, unknown> = {};
    for (const [inst, raw] of Object.entries(a?.rawInstances ?? {})) {
      const same = b !== undefined && sameValue(raw, b.rawInstances[inst]) && b.instances[inst] !== undefined;
      rawInstances[inst] = raw;
      const chosen = same ? b.instances[inst] : a?.instances[inst];
      if (chosen) instances[inst] = chosen;
    }
    plugins.set(name, {
      name,
      file: b?.file ?? a!.file,
      instances,
      rawInstances,
      accounts: b?.accounts ?? a?.accounts ?? {},
    });
  }

  const secrets = new Set([...candidate.secrets, ...(secretsOf.get(prev) ?? [])]);
  const secretFiles = [...new Set([...candidate.secretFiles, ...prev.secretFiles])].sort();
  // Still without a running definition: invalid before and now (a deleted file drops out).
  const invalidAgents = new Map(
    rejected
      .filter((r) => !agents.has(r.agentId) && runsOrJoins(r.agentId))
      .map((r) => [r.agentId, r.reason]),
  );
  const snapshot = build(candidate, version, agents, {
    invalidAgents,
    llm: providers,
    runtime: runtime as RuntimeFile,
    broker: prev.broker,
    memory: prev.memory,
    plugins,
    sections: sectionValues(candidate, prev),
    secrets,
    secretFiles,
  });
  return {
    snapshot,
    errors,
    warnings,
    applied,
    rejected,
    restartRequired: restartChanges(d, prev, candidate),
    diff: d,
    unchanged,
    ...read,
  };
}

/** Every restart-required change of `d`, with its reason, file and line. */
function restartChanges(d: SnapshotDiff, prev: ConfigSnapshot, candidate: Candidate): RestartChange[] {
  const fileOf = ({ agentId, field }: { agentId?: string; field: string }): string | undefined => {
    if (agentId !== undefined) return (candidate.agents.get(agentId) ?? prev.agents.get(agentId))?.file;
    const rel = field.split(' ')[0]!;
    if (!rel.startsWith('plugins/')) return join(candidate.configDir, rel);
    const plugin = rel.slice('plugins/'.length, -'.yaml'.length);
    return (candidate.plugins.get(plugin) ?? prev.plugins.get(plugin))?.file;
  };
  return restartRequiredChanges(d).map(({ path, ...change }) => {
    const file = fileOf(change);
    const locate = file === undefined ? undefined : candidate.locators.get(file);
    // A key gone from the file is placed at the nearest key still there (never at the file's start).
    const pos = locate && nearestPosition({ locate: keyOf(locate) }, path, 1);
    return {
      ...change,
      reason: restartReason(change),
      ...(file === undefined ? {} : { file }),
      ...(pos ? { line: pos.line } : {}),
    };
  });
}

/**
 * Where the key at `segments` is written, rather than its value: a block value (an instance's mapping) starts
 * on the line after its key. An array item has no key: the item itself.
 */
function keyOf(locate: SourceFile['locate']): SourceFile['locate'] {
  return (segments) => {
    const value = locate(segments);
    const last = segments[segments.length - 1];
    return value && typeof last === 'string' ? locate(segments.slice(0, -1), last) : value;
  };
}

/** Each section's new value, or its running one where a file of it could not be used. */
function sectionValues(candidate: Candidate, prev: ConfigSnapshot | null): ReadonlyMap<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [name, r] of candidate.sections)
    out.set(name, r.keepPrevious && prev ? (prev.sections.get(name) ?? null) : r.value);
  return out;
}

function build(
  candidate: Candidate,
  version: number,
  agents: Map<string, AgentSnapshot>,
  parts: {
    invalidAgents: ReadonlyMap<string, string>;
    llm: Record<string, ProviderConfig>;
    runtime: ConfigSnapshot['runtime'];
    broker: ConfigSnapshot['broker'];
    memory: ConfigSnapshot['memory'];
    plugins: Map<string, PluginSnapshot>;
    sections: ReadonlyMap<string, unknown>;
    secrets: ReadonlySet<string>;
    secretFiles: string[];
  },
): ConfigSnapshot {
  const redact = makeRedactor(parts.secrets);
  const llm = { providers: parts.llm };
  const snapshot: ConfigSnapshot = {
    version,
    configDir: candidate.configDir,
    llm,
    agents,
    invalidAgents: parts.invalidAgents,
    sections: parts.sections,
    broker: parts.broker,
    memory: parts.memory,
    runtime: parts.runtime,
    plugins: parts.plugins,
    secretFiles: parts.secretFiles,
    contentHash: candidate.contentHash,
    redact,
    provider: (name) => llm.providers[name],
  };
  for (const a of agents.values()) deepFreeze(a);
  for (const p of parts.plugins.values()) deepFreeze(p);
  deepFreeze(llm);
  deepFreeze(parts.runtime);
  deepFreeze(parts.broker);
  deepFreeze(parts.memory);
  Object.freeze(agents);
  Object.freeze(snapshot);
  secretsOf.set(snapshot, parts.secrets);
  return snapshot;
}
