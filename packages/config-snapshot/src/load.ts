/** Reads the whole config directory into a candidate configuration: every part validated on its own. */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ConfigIssue, IssueScope } from './issues.js';
import { resolveRefs, type RefContext } from './refs.js';
import {
  agentFileSchema,
  blockNameSchema,
  brokerFileSchema,
  ID_LIMITS,
  llmFileSchema,
  memoryFileSchema,
  pluginFileSchema,
  runtimeFileSchema,
  type AgentFile,
  type BrokerFile,
  type LlmFile,
  type MemoryFile,
  type ProviderConfig,
  type RuntimeFile,
} from './schemas.js';
import type { SectionReader, SectionResult } from './section.js';
import type { AgentSnapshot, PluginSnapshot } from './snapshot.js';
import { beginReadPass, issueAt, readYamlFile, type IssueInput, type SourceFile } from './source.js';
import { validateAt } from './validate.js';

export interface PluginSchemas {
  /** JSON Schema of one block under `instances`. */
  instance?: object;
  /** JSON Schema of one block under `accounts`. */
  account?: object;
}

export interface ReadOptions {
  /** The daemon's working directory: `${file:}` and relative paths resolve against it. Default `process.cwd()`. */
  cwd?: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** Channel plugin names the daemon has; when given, bindings to other plugins are rejected. */
  channels?: readonly string[];
  /** Schemas of plugin files by plugin name (channels and provider accounts). */
  pluginSchemas?: Readonly<Record<string, PluginSchemas>>;
  /**
   * Wall-clock ms: a file changed (ctime) after this is reported as `CONFIG_FILE_CHANGING` instead of being
   * parsed (see `loadConfigWhenQuiet`). Absent: every file is read as it is.
   */
  settledBefore?: number;
  /** Readers of the files other packages own (e.g. `pollers.yaml`); see `section.ts`. */
  sections?: readonly SectionReader[];
}

/** Plugin fields whose values are secrets even when written literally. */
const SECRET_FIELD = /(token|secret|password|api_?key)$/i;

/** Everything valid that was read, plus every issue. Agents here are not yet versioned. */
export interface Candidate {
  configDir: string;
  /** A global file is invalid: nothing may be applied. */
  fatal: boolean;
  issues: ConfigIssue[];
  llm: LlmFile;
  /** Providers named in llm.yaml that are invalid. */
  invalidProviders: Set<string>;
  agents: Map<string, Omit<AgentSnapshot, 'version'>>;
  /** Agents whose file exists but is invalid, with their issues. */
  rejectedAgents: Map<string, ConfigIssue[]>;
  /** What each section reader returned, by section name. */
  sections: Map<string, SectionResult>;
  broker: BrokerFile;
  memory: MemoryFile;
  runtime: RuntimeFile;
  plugins: Map<string, PluginSnapshot>;
  /** Every file named by `${file:}`, including missing and refused ones, so that the watcher follows them. */
  secretFiles: string[];
  secrets: Set<string>;
  contentHash: string;
  /** How to locate a path in each file read (global, plugin and agent files), by its displayed name. */
  locators: Map<string, SourceFile['locate']>;
}

export function readCandidate(configDir: string, opts: ReadOptions = {}): Candidate {
  const endPass = beginReadPass();
  try {
    return readDirectory(configDir, opts);
  } finally {
    endPass();
  }
}

function readDirectory(configDir: string, opts: ReadOptions): Candidate {
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  const issues: ConfigIssue[] = [];
  const secrets = new Set<string>();
  /** Every file named by `${file:}`, resolved or not, and what was found there (see RefContext.onFile). */
  const secretFiles = new Map<string, string>();
  const fileHashes: string[] = [];

  const refCtx = (
    src: Pick<SourceFile, 'display' | 'locate'>,
    base: Omit<IssueInput, 'code' | 'message'>,
    sink: ConfigIssue[],
  ): RefContext => ({
    cwd,
    env,
    onSecret: (value) => {
      secrets.add(value);
    },
    onFile: (path, state) => {
      secretFiles.set(path, state);
    },
    onIssue: (segments, code, message, hint) => {
      sink.push(issueAt(src, segments, { ...base, code, message, ...(hint ? { hint } : {}) }));
    },
  });

  const candidate: Candidate = {
    configDir,
    fatal: false,
    issues,
    llm: { providers: {} },
    invalidProviders: new Set(),
    agents: new Map(),
    rejectedAgents: new Map(),
    sections: new Map(),
    broker: defaultsOf(brokerFileSchema) as BrokerFile,
    memory: defaultsOf(memoryFileSchema) as MemoryFile,
    runtime: defaultsOf(runtimeFileSchema) as RuntimeFile,
    plugins: new Map(),
    secretFiles: [],
    secrets,
    contentHash: '',
    locators: new Map(),
  };

  if (!isDir(configDir)) {
    issues.push({
      code: 'CONFIG_DIR_MISSING',
      severity: 'error',
      scope: 'global',
      file: configDir,
      path: '',
      message: `config directory ${configDir} does not exist`,
      hint: 'pass --config-dir with the directory that holds llm.yaml and agents.d/',
    });
    candidate.fatal = true;
    return candidate;
  }

  const fileOptions = opts.settledBefore !== undefined ? { settledBefore: opts.settledBefore } : {};
  const read: ReadFile = (rel, scope, extra = {}, maxBytes) => {
    const options = maxBytes === undefined ? fileOptions : { ...fileOptions, maxBytes };
    const { src, issues: found } = readYamlFile(configDir, rel, scope, extra, options);
    issues.push(...found);
    if (src) {
      fileHashes.push(`${rel}:${src.hash}`);
      candidate.locators.set(src.display, src.locate);
    }
    return src;
  };

  // Global files: broker, memory, runtime. Any problem here is fatal.
  const globals: [string, object, 'broker' | 'memory' | 'runtime'][] = [
    ['broker.yaml', brokerFileSchema, 'broker'],
    ['memory.yaml', memoryFileSchema, 'memory'],
    ['runtime.yaml', runtimeFileSchema, 'runtime'],
  ];
  for (const [rel, schema, key] of globals) {
    const exists = existsSync(join(configDir, rel));
    const src = exists ? read(rel, 'global') : undefined;
    if (exists && !src) {
      candidate.fatal = true;
      continue;
    }
    const sink: ConfigIssue[] = [];
    const where = src ?? { display: join(configDir, rel), locate: () => undefined };
    const value = resolveRefs(src?.value ?? {}, refCtx(where, { scope: 'global' }, sink));
    const doc = value === null ? {} : value;
    if (sink.length === 0) sink.push(...validateAt(schema, doc, where, [], { scope: 'global' }));
    if (
      sink.length === 0 &&
      key === 'broker' &&
      (doc as BrokerFile).kind === 'nats' &&
      !(doc as BrokerFile).url
    ) {
      sink.push(
        issueAt(where, [], {
          scope: 'global',
          code: 'CONFIG_MISSING_KEY',
          message: 'kind "nats" needs "url"',
          hint: 'add url: nats://<host>:<port>',
        }),
      );
    }
    issues.push(...sink);
    if (sink.length > 0) candidate.fatal = true;
    else (candidate as unknown as Record<string, unknown>)[key] = doc;
  }

  // Plugin files: channel instances and provider accounts (a file a section owns is the section's).
  const owned = new Set((opts.sections ?? []).flatMap((r) => r.files));
  const pluginDir = join(configDir, 'plugins');
  for (const rel of yamlFiles(pluginDir)) {
    if (owned.has(`plugins/${rel}`)) continue;
    const name = rel.replace(/\.ya?ml$/, '');
    const src = read(`plugins/${rel}`, 'plugin', { plugin: name });
    if (!src) continue;
    readPlugin(name, src, opts, candidate, (base, sink) => refCtx(src, base, sink));
  }

  // llm.yaml: each provider stands alone.
  if (existsSync(join(configDir, 'llm.yaml'))) {
    const src = read('llm.yaml', 'provider');
    if (src) readLlm(src, candidate, (base, sink) => refCtx(src, base, sink));
  }

  // Agents: each file stands alone.
  const agentDir = join(configDir, 'agents.d');
  const files = yamlFiles(agentDir);
  if (files.length === 0) {
    issues.push({
      code: 'CONFIG_NO_AGENTS',
      severity: 'warning',
      scope: 'global',
      file: join(configDir, 'agents.d'),
      path: '',
      message: 'no agent files found',
      hint: 'add agents.d/<agent_id>.yaml',
    });
  }
  const seenIds = new Set<string>();
  for (const rel of files) {
    const id = rel.replace(/\.ya?ml$/, '');
    const display = join(configDir, 'agents.d', rel);
    const reject = (found: ConfigIssue[]): void => {
      issues.push(...found);
      candidate.rejectedAgents.set(id, [...(candidate.rejectedAgents.get(id) ?? []), ...found]);
      candidate.agents.delete(id);
    };
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(id) || id.length > ID_LIMITS.agent) {
      reject([
        {
          code: 'CONFIG_BAD_AGENT_ID',
          severity: 'error',
          scope: 'agent',
          agentId: id,
          file: display,
          path: '',
          message:
            id.length > ID_LIMITS.agent
              ? `agent id "${id.slice(0, 40)}…" is ${id.length} characters long; at most ${ID_LIMITS.agent} are allowed`
              : `"${id}" is not a valid agent id`,
          hint: `rename the file to at most ${ID_LIMITS.agent} letters, digits, "_" and "-"`,
        },
      ]);
      continue;
    }
    if (seenIds.has(id)) {
      reject([
        {
          code: 'CONFIG_DUPLICATE_AGENT',
          severity: 'error',
          scope: 'agent',
          agentId: id,
          file: display,
          path: '',
          message: `agent "${id}" is defined by more than one file`,
          hint: 'keep one of agents.d/<id>.yaml and agents.d/<id>.yml',
        },
      ]);
      continue;
    }
    seenIds.add(id);
    const { src, issues: found } = readYamlFile(
      configDir,
      `agents.d/${rel}`,
      'agent',
      { agentId: id },
      fileOptions,
    );
    if (!src) {
      reject(found);
      continue;
    }
    fileHashes.push(`agents.d/${rel}:${src.hash}`);
    candidate.locators.set(src.display, src.locate);
    const sink: ConfigIssue[] = [];
    const agent = readAgent(
      id,
      src,
      candidate,
      opts,
      cwd,
      refCtx(src, { scope: 'agent', agentId: id }, sink),
      sink,
    );
    if (sink.length > 0 || !agent) reject(sink);
    else candidate.agents.set(id, agent);
  }

  // Sections: the files other packages own, read here and checked by their owner's reader.
  for (const reader of opts.sections ?? [])
    candidate.sections.set(reader.name, readSection(reader, candidate, read, refCtx));

  candidate.secretFiles = [...secretFiles.keys()].sort();
  const h = createHash('sha256');
  for (const line of fileHashes.sort()) h.update(line + '\n');
  // A secret's state, not only its bytes: creating a missing file or fixing its mode is a change.
  for (const [p, state] of [...secretFiles].sort()) h.update(`secret:${p}:${state}\n`);
  candidate.contentHash = h.digest('hex');
  return candidate;
}

type RefCtxFactory = (base: Omit<IssueInput, 'code' | 'message'>, sink: ConfigIssue[]) => RefContext;

function readPlugin(
  name: string,
  src: SourceFile,
  opts: ReadOptions,
  candidate: Candidate,
  ctxFor: RefCtxFactory,
): void {
  const base = { scope: 'plugin' as const, plugin: name };
  const top: ConfigIssue[] = validateAt(pluginFileSchema, structuredClone(src.value ?? {}), src, [], base);
  candidate.issues.push(...top);
  if (top.length > 0) return;
  const raw = (src.value ?? {}) as {
    instances?: Record<string, unknown>;
    accounts?: Record<string, unknown>;
  };
  const schemas = opts.pluginSchemas?.[name];
  if (opts.pluginSchemas && !schemas) {
    candidate.issues.push({
      code: 'CONFIG_PLUGIN_NO_SCHEMA',
      severity: 'warning',
      scope: 'plugin',
      plugin: name,
      file: src.display,
      path: '',
      message: `no plugin named "${name}" is known; its blocks are not validated`,
      hint: 'check the file name against the channel plugins and provider kinds the daemon has',
    });
  }
  const blocks = (
    section: 'instances' | 'accounts',
    schema: object | undefined,
  ): Record<string, Record<string, unknown>> => {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [key, value] of Object.entries(raw[section] ?? {})) {
      const sink: ConfigIssue[] = validateAt(blockNameSchema, { [key]: null }, src, [section], base);
      if (sink.length > 0) {
        candidate.issues.push(...sink);
        continue;
      }
      const resolved = resolveRefs(value ?? {}, ctxFor(base, sink), [section, key]) as Record<
        string,
        unknown
      >;
      if (schema && sink.length === 0) sink.push(...validateAt(schema, resolved, src, [section, key], base));
      candidate.issues.push(...sink);
      if (sink.length === 0) {
        out[key] = resolved;
        const ctx = ctxFor(base, sink);
        for (const [field, v] of Object.entries(resolved))
          if (SECRET_FIELD.test(field) && typeof v === 'string') ctx.onSecret(v);
      }
    }
    return out;
  };
  candidate.plugins.set(name, {
    name,
    file: src.display,
    instances: blocks('instances', schemas?.instance),
    accounts: blocks('accounts', schemas?.account),
    rawInstances: structuredClone(raw.instances ?? {}),
  });
}

function readLlm(src: SourceFile, candidate: Candidate, ctxFor: RefCtxFactory): void {
  const base = { scope: 'provider' as const };
  const value = (src.value ?? {}) as Record<string, unknown>;
  // Top-level shape first (unknown keys, missing `providers`), without the provider blocks.
  const shape = { ...value, providers: {} };
  const top = validateAt(llmFileSchema, shape, src, [], base);
  candidate.issues.push(...top);
  const providers = value.providers;
  if (providers === null || typeof providers !== 'object' || Array.isArray(providers)) return;
  for (const [name, block] of Object.entries(providers)) {
    const sink: ConfigIssue[] = [];
    const b = { ...base, provider: name };
    const resolved = resolveRefs(block ?? {}, ctxFor(b, sink), ['providers', name]);
    const wrapped = { providers: { [name]: resolved } };
    // A failed reference already explains the problem; the schema would only add "missing key" noise.
    if (sink.length === 0) sink.push(...validateAt(llmFileSchema, wrapped, src, [], b));
    candidate.issues.push(...sink);
    if (sink.length === 0) {
      const provider = wrapped.providers[name] as ProviderConfig;
      candidate.llm.providers[name] = provider;
      // A key written literally is as secret as one read from a file.
      ctxFor(b, sink).onSecret(provider.api_key);
    } else candidate.invalidProviders.add(name);
  }
}

function readAgent(
  id: string,
  src: SourceFile,
  candidate: Candidate,
  opts: ReadOptions,
  cwd: string,
  ctx: RefContext,
  sink: ConfigIssue[],
): Omit<AgentSnapshot, 'version'> | undefined {
  const base = { scope: 'agent' as const, agentId: id };
  const value = resolveRefs(src.value ?? {}, ctx);
  if (sink.length > 0) return undefined;
  sink.push(...validateAt(agentFileSchema, value, src, [], base));
  if (sink.length > 0) return undefined;
  const def = value as AgentFile;

  const provider = def.model.provider;
  if (!candidate.llm.providers[provider]) {
    const invalid = candidate.invalidProviders.has(provider);
    const known = Object.keys(candidate.llm.providers);
    sink.push(
      issueAt(src, ['model', 'provider'], {
        ...base,
        code: 'CONFIG_UNKNOWN_PROVIDER',
        message: invalid
          ? `provider "${provider}" is invalid in llm.yaml`
          : `provider "${provider}" is not defined in llm.yaml`,
        hint: invalid
          ? 'fix the errors reported for llm.yaml'
          : known.length
            ? `use one of: ${known.join(', ')}`
            : 'define it under providers in llm.yaml',
      }),
    );
  }
  def.inbound_bindings.forEach((b, i) => {
    if (opts.channels && !opts.channels.includes(b.plugin)) {
      sink.push(
        issueAt(src, ['inbound_bindings', i, 'plugin'], {
          ...base,
          code: 'CONFIG_UNKNOWN_PLUGIN',
          message: `channel plugin "${b.plugin}" does not exist`,
          hint: `use one of: ${opts.channels.join(', ')}`,
        }),
      );
      return;
    }
    const plugin = candidate.plugins.get(b.plugin);
    if (b.instance !== undefined && !plugin?.instances[b.instance]) {
      const rawHas = plugin?.rawInstances[b.instance] !== undefined;
      sink.push(
        issueAt(src, ['inbound_bindings', i, 'instance'], {
          ...base,
          code: 'CONFIG_UNKNOWN_INSTANCE',
          message: rawHas
            ? `instance "${b.instance}" of plugin "${b.plugin}" is invalid`
            : `plugin "${b.plugin}" has no instance "${b.instance}"`,
          hint: rawHas
            ? `fix the errors reported for plugins/${b.plugin}.yaml`
            : `define it under instances in plugins/${b.plugin}.yaml`,
        }),
      );
    } else if (opts.channels && (!plugin || Object.keys(plugin.instances).length === 0)) {
      sink.push(
        issueAt(src, ['inbound_bindings', i, 'plugin'], {
          ...base,
          code: 'CONFIG_UNKNOWN_INSTANCE',
          message: `channel plugin "${b.plugin}" has no valid instance`,
          hint: `define one under instances in plugins/${b.plugin}.yaml`,
        }),
      );
    }
    for (const channel of Object.keys(b.outbound_allowlist)) {
      if (opts.channels && !opts.channels.includes(channel)) {
        sink.push(
          issueAt(
            src,
            ['inbound_bindings', i, 'outbound_allowlist'],
            {
              ...base,
              code: 'CONFIG_UNKNOWN_PLUGIN',
              message: `channel "${channel}" does not exist`,
              hint: `use one of: ${opts.channels.join(', ')}`,
            },
            channel,
          ),
        );
      }
    }
  });
  for (const [kind, account] of Object.entries(def.credentials)) {
    const plugin = candidate.plugins.get(kind);
    if (!plugin?.accounts[account]) {
      sink.push(
        issueAt(src, ['credentials', kind], {
          ...base,
          code: 'CONFIG_UNKNOWN_ACCOUNT',
          message: `account "${account}" is not defined (or invalid) in plugins/${kind}.yaml`,
          hint: `define it under accounts in plugins/${kind}.yaml`,
        }),
      );
    }
  }
  if (sink.length > 0) return undefined;
  const dataDir = resolve(cwd, candidate.runtime.data_dir);
  const under = (leaf: string): string => join(dataDir, 'agents', id, leaf);
  return {
    id,
    file: src.display,
    definition: def,
    workspace: def.workspace ? resolve(cwd, def.workspace) : under('workspace'),
    skillsDir: def.skills_dir ? resolve(cwd, def.skills_dir) : under('skills'),
    transcriptsDir: def.transcripts_dir ? resolve(cwd, def.transcripts_dir) : under('transcripts'),
  };
}

type ReadFile = (
  rel: string,
  scope: IssueScope,
  extra?: Partial<IssueInput>,
  maxBytes?: number,
) => SourceFile | undefined;

/** Reads a section's files and hands them to its owner's reader; a reader that throws is an issue. */
function readSection(
  reader: SectionReader,
  candidate: Candidate,
  read: ReadFile,
  refCtx: (src: SourceFile, base: Omit<IssueInput, 'code' | 'message'>, sink: ConfigIssue[]) => RefContext,
): SectionResult {
  const files = new Map<string, SourceFile>();
  const unreadable = new Set<string>();
  for (const rel of reader.files) {
    if (!existsSync(join(candidate.configDir, rel))) continue;
    const src = read(rel, 'section', { section: reader.name }, reader.maxFileBytes);
    if (src) files.set(rel, src);
    else unreadable.add(rel);
  }
  const agents = [...candidate.agents.values()].map((a) => ({
    id: a.id,
    credentials: { ...(a.definition.credentials as Record<string, string> | undefined) },
  }));
  try {
    const result = reader.read({
      files,
      unreadable,
      agents,
      resolveRefs: (src, value, path, base, sink) => resolveRefs(value, refCtx(src, base, sink), path),
    });
    candidate.issues.push(...result.issues);
    return result;
  } catch (err) {
    candidate.issues.push({
      code: 'CONFIG_SECTION_FAILED',
      severity: 'error',
      scope: 'section',
      section: reader.name,
      file: join(candidate.configDir, reader.files[0] ?? ''),
      path: '',
      message: `the reader of section "${reader.name}" failed: ${(err as Error).message}`,
      hint: 'report this as a bug; the section keeps its running value',
    });
    return { value: null, issues: [], keepPrevious: true };
  }
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function yamlFiles(dir: string): string[] {
  if (!isDir(dir)) return [];
  try {
    return readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('.'))
      .sort();
  } catch {
    return [];
  }
}

/** The value an empty object becomes once the schema's defaults are filled in. */
function defaultsOf(schema: object): unknown {
  const value = {};
  validateAt(schema, value, { display: '', locate: () => undefined }, [], { scope: 'global' });
  return value;
}
