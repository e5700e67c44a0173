/** Reads the whole config directory into a candidate configuration: every part validated on its own. */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ConfigIssue, IssueScope } from './issues.js';
import { mergeLegacyMailPoller } from './legacy.js';
import { resolveRefs, type RefContext } from './refs.js';
import {
  agentFileSchema,
  blockNameSchema,
  brokerFileSchema,
  ID_LIMITS,
  jobSchema,
  llmFileSchema,
  memoryFileSchema,
  pluginFileSchema,
  pollersFileSchema,
  runtimeFileSchema,
  type AgentFile,
  type BrokerFile,
  type LlmFile,
  type MemoryFile,
  type PollerJob,
  type PollersFile,
  type ProviderConfig,
  type RuntimeFile,
} from './schemas.js';
import type { AgentSnapshot, LegacyFile, LoadedJob, PluginSnapshot, PollersSnapshot } from './snapshot.js';
import {
  beginReadPass,
  issueAt,
  readYamlFile,
  type IssueInput,
  type Segments,
  type SourceFile,
} from './source.js';
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
}

export const LEGACY_MAIL_POLLER_FILE = 'mail-poller.yaml';

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
  pollers: PollersSnapshot | null;
  pollersInvalid: boolean;
  broker: BrokerFile;
  memory: MemoryFile;
  runtime: RuntimeFile;
  plugins: Map<string, PluginSnapshot>;
  legacyMailPoller: LegacyFile | null;
  /** Every file named by `${file:}`, including missing and refused ones, so that the watcher follows them. */
  secretFiles: string[];
  secrets: Set<string>;
  contentHash: string;
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
    pollers: null,
    pollersInvalid: false,
    broker: defaultsOf(brokerFileSchema) as BrokerFile,
    memory: defaultsOf(memoryFileSchema) as MemoryFile,
    runtime: defaultsOf(runtimeFileSchema) as RuntimeFile,
    plugins: new Map(),
    legacyMailPoller: null,
    secretFiles: [],
    secrets,
    contentHash: '',
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
  const read = (rel: string, scope: IssueScope, extra: Partial<IssueInput> = {}): SourceFile | undefined => {
    const { src, issues: found } = readYamlFile(configDir, rel, scope, extra, fileOptions);
    issues.push(...found);
    if (src) fileHashes.push(`${rel}:${src.hash}`);
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

  // Plugin files: channel instances and provider accounts.
  const pluginDir = join(configDir, 'plugins');
  for (const rel of yamlFiles(pluginDir)) {
    const name = rel.replace(/\.ya?ml$/, '');
    const src = read(`plugins/${rel}`, 'plugin', { plugin: name });
    if (!src) continue;
    if (rel === LEGACY_MAIL_POLLER_FILE) {
      candidate.legacyMailPoller = { file: src.display, value: src.value };
      continue;
    }
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

  // pollers.yaml: the subsystem's settings, and each job on its own.
  if (existsSync(join(configDir, 'pollers.yaml'))) {
    const src = read('pollers.yaml', 'pollers');
    if (!src) candidate.pollersInvalid = true;
    else readPollers(src, candidate, (base, sink) => refCtx(src, base, sink));
  }

  // Legacy plugins/mail-poller.yaml: its jobs join pollers.jobs (legacy.ts).
  mergeLegacyMailPoller(candidate);

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

function readPollers(src: SourceFile, candidate: Candidate, ctxFor: RefCtxFactory): void {
  const base = { scope: 'pollers' as const };
  const value = (src.value ?? {}) as { pollers?: Record<string, unknown> };
  const rawJobs = value?.pollers && typeof value.pollers === 'object' ? value.pollers.jobs : undefined;
  // Settings without jobs: each job is checked on its own below.
  const sink: ConfigIssue[] = [];
  const settingsOnly =
    value && typeof value === 'object' && value.pollers && typeof value.pollers === 'object'
      ? { ...value, pollers: { ...value.pollers, jobs: Array.isArray(rawJobs) ? [] : rawJobs } }
      : value;
  const resolved = resolveRefs(settingsOnly, ctxFor(base, sink)) as PollersFile;
  if (sink.length === 0) sink.push(...validateAt(pollersFileSchema, resolved, src, [], base));
  candidate.issues.push(...sink);
  if (sink.length > 0) {
    candidate.pollersInvalid = true;
    return;
  }
  const { jobs: _none, ...settings } = resolved.pollers;
  const jobs: LoadedJob[] = [];
  const rejected: { id?: string; index: number; issues: ConfigIssue[] }[] = [];
  const byId = new Map<string, number[]>();
  (Array.isArray(rawJobs) ? rawJobs : []).forEach((raw, index) => {
    const path: Segments = ['pollers', 'jobs', index];
    // An id too long to be valid is no name for the job: it would flood every log line and list.
    const id =
      raw &&
      typeof raw === 'object' &&
      typeof (raw as { id?: unknown }).id === 'string' &&
      (raw as { id: string }).id.length <= ID_LIMITS.job
        ? (raw as { id: string }).id
        : undefined;
    const jobBase = { scope: 'job' as const, ...(id ? { jobId: id } : {}) };
    const jobSink: ConfigIssue[] = [];
    const job = resolveRefs(raw, ctxFor(jobBase, jobSink), path);
    if (jobSink.length === 0) jobSink.push(...validateAt(jobSchema, job, src, path, jobBase));
    if (id) byId.set(id, [...(byId.get(id) ?? []), index]);
    if (jobSink.length > 0) {
      rejected.push({ ...(id ? { id } : {}), index, issues: jobSink });
      return;
    }
    jobs.push({
      index,
      spec: job as PollerJob,
      issueAt: (p, message, hint, code = 'CONFIG_INVALID_VALUE') =>
        issueAt(src, [...path, ...p], { ...jobBase, code, message, ...(hint ? { hint } : {}) }),
    });
  });
  // Duplicate ids reject every entry that shares the id.
  for (const [id, indexes] of byId) {
    if (indexes.length < 2) continue;
    for (const index of indexes) {
      const issue = issueAt(src, ['pollers', 'jobs', index, 'id'], {
        scope: 'job',
        jobId: id,
        code: 'CONFIG_DUPLICATE_JOB',
        message: `job id "${id}" is used by ${indexes.length} jobs`,
        hint: 'give every job its own id',
      });
      const loaded = jobs.findIndex((j) => j.index === index);
      if (loaded >= 0) jobs.splice(loaded, 1);
      const r = rejected.find((x) => x.index === index);
      if (r) r.issues.push(issue);
      else rejected.push({ id, index, issues: [issue] });
    }
  }
  for (const r of rejected) candidate.issues.push(...r.issues);
  rejected.sort((a, b) => a.index - b.index);
  candidate.pollers = { file: src.display, settings, jobs, rejected };
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
export function defaultsOf(schema: object): unknown {
  const value = {};
  validateAt(schema, value, { display: '', locate: () => undefined }, [], { scope: 'global' });
  return value;
}
