/** The immutable, versioned view of the whole configuration that every turn and job reads. */
import type { AgentFile, BrokerFile, LlmFile, MemoryFile, ProviderConfig, RuntimeFile } from './schemas.js';

export interface AgentSnapshot {
  readonly id: string;
  /** Snapshot version at which this definition was last applied. */
  readonly version: number;
  readonly file: string;
  /** The validated definition, with defaults filled in and references resolved. */
  readonly definition: Readonly<AgentFile>;
  /** Absolute paths (defaults under `<data_dir>/agents/<id>/`). */
  readonly workspace: string;
  readonly skillsDir: string;
  readonly transcriptsDir: string;
}

export interface PluginSnapshot {
  readonly name: string;
  readonly file: string;
  /** Resolved instance blocks (secrets included). */
  readonly instances: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly accounts: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Instance blocks as written, references unresolved: compared to tell a restart-required edit from a rotated secret. */
  readonly rawInstances: Readonly<Record<string, unknown>>;
}

export interface ConfigSnapshot {
  readonly version: number;
  readonly configDir: string;
  readonly llm: Readonly<LlmFile>;
  readonly agents: ReadonlyMap<string, AgentSnapshot>;
  /**
   * Agents whose file exists but has never been valid, by id, with the located reason: no definition of
   * theirs runs. They are not "added" when their file becomes valid: the next reload applies them.
   */
  readonly invalidAgents: ReadonlyMap<string, string>;
  /** What each registered section reader made of its files, by section name (opaque here). */
  readonly sections: ReadonlyMap<string, unknown>;
  readonly broker: Readonly<BrokerFile>;
  readonly memory: Readonly<MemoryFile>;
  readonly runtime: Readonly<RuntimeFile>;
  readonly plugins: ReadonlyMap<string, PluginSnapshot>;
  /** Absolute paths of every `${file:}` secret, for the watcher. */
  readonly secretFiles: readonly string[];
  /** Hash of every config file and secret file read; equal hashes mean nothing changed on disk. */
  readonly contentHash: string;
  /** Replaces every secret value that occurs in `text` with `[redacted]`. */
  redact(text: string): string;
  provider(name: string): Readonly<ProviderConfig> | undefined;
}

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const NO_SECRETS = (text: string): string => text;

// The forms a secret takes once printed: as is, JSON-escaped (a quote or a backslash in it) and
// percent-encoded (a token in a URL path or query).
function printedForms(secret: string): string[] {
  const forms = [secret, JSON.stringify(secret).slice(1, -1)];
  try {
    forms.push(encodeURIComponent(secret), encodeURI(secret));
  } catch {
    // A lone surrogate cannot be percent-encoded; then no URL holds it either.
  }
  return forms;
}

/** Returns `text` itself when no secret occurs in it. */
export function makeRedactor(secrets: Iterable<string>): (text: string) => string {
  const originals = [...new Set(secrets)].filter((s) => s.length >= 4);
  if (originals.length === 0) return NO_SECRETS;
  // Longest first so that a secret containing another is replaced whole.
  const list = [...new Set(originals.flatMap(printedForms))].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const s of list) if (out.includes(s)) out = out.split(s).join('[redacted]');
    return out;
  };
}

/**
 * The snapshot's `redact`, or `null` when it has no secret to hide: a logger given `null` skips redaction,
 * so that a configuration without secrets costs nothing per log line.
 */
export function secretRedactor(snapshot: Pick<ConfigSnapshot, 'redact'>): ((text: string) => string) | null {
  return snapshot.redact === NO_SECRETS ? null : snapshot.redact;
}
