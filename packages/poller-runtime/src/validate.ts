/**
 * Job validation beyond the envelope: kind, kind schema and checks, template placeholders, schedule,
 * agent, channel bindings and credentials. Never throws; every invalid job gets located issues.
 */
import { createHash } from 'node:crypto';
import { formatIssue, type ConfigIssue } from '@agent/config-snapshot';
import { canonicalJson, compileSchema, validateTemplate, type PollerKind } from '@agent/poller-core';
import type { AgentDirectory } from './agent-directory.js';
import { accountIssues } from './validate-account.js';
import type { LoadedJob, PollersSection } from './pollers-section.js';
import type { PollerJob } from './pollers-schema.js';
import type { KindRegistry } from './registry.js';
import { parseSchedule, type Schedule, type ScheduleSpec } from './schedule.js';
import { sourceKeyOf } from './source-key.js';

export interface Destination {
  channel: string;
  to: string;
}

/** A job ready to run. */
export interface JobDefinition {
  readonly id: string;
  readonly kind: PollerKind;
  readonly agent: string;
  readonly schedule: Schedule;
  readonly scheduleSpec: Readonly<ScheduleSpec>;
  /** Validated config with the kind's defaults filled in. */
  readonly config: Readonly<Record<string, unknown>>;
  readonly deliver: Destination;
  readonly failureTo: Destination | null;
  readonly pausedOnBoot: boolean;
  /** Account name from the agent's `credentials`, when the kind needs one. */
  readonly accountName: string | null;
  readonly sourceKey: string;
  /**
   * SHA-256 (hex) of the definition's canonical JSON; a reload replaces the job when it changes, and a
   * cluster stores it as the job's `def_hash`. A digest, not the JSON: it is kept for every job. Worked out
   * at its first use.
   */
  readonly fingerprint: string;
}

export interface RejectedJob {
  /** Absent when the entry had no usable id. */
  id?: string;
  index: number;
  issues: ConfigIssue[];
}

export interface ValidationResult {
  valid: JobDefinition[];
  rejected: RejectedJob[];
}

type Segments = (string | number)[];

function ajvPath(pointer: string): Segments {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function schemaIssues(job: LoadedJob, kind: PollerKind, config: unknown): ConfigIssue[] {
  let fn;
  try {
    fn = compileSchema(kind.configSchema);
  } catch (err) {
    return [
      job.issueAt(
        ['kind'],
        `kind "${kind.kind}" has a config schema that does not compile: ${(err as Error).message}`,
        undefined,
        'POLLER_INVALID_KIND',
      ),
    ];
  }
  if (fn(config)) return [];
  return (fn.errors ?? [])
    .filter((e) => e.keyword !== 'if')
    .map((e) => {
      const path = ['config', ...ajvPath(e.instancePath)];
      if (e.keyword === 'additionalProperties') {
        const key = String((e.params as { additionalProperty: string }).additionalProperty);
        const allowed = Object.keys((e.parentSchema as { properties?: object }).properties ?? {});
        return job.issueAt(
          [...path, key],
          `unknown key "${key}" for kind "${kind.kind}"`,
          `use one of: ${allowed.join(', ')}`,
          'POLLER_INVALID_CONFIG',
        );
      }
      if (e.keyword === 'required') {
        const missing = String((e.params as { missingProperty: string }).missingProperty);
        return job.issueAt(
          path,
          `missing required key "${missing}" for kind "${kind.kind}"`,
          `add "${missing}"`,
          'POLLER_INVALID_CONFIG',
        );
      }
      return job.issueAt(path, e.message ?? 'invalid value', undefined, 'POLLER_INVALID_CONFIG');
    });
}

type DefinitionFields = Omit<JobDefinition, 'fingerprint'>;

/**
 * A job definition. Its fingerprint is the SHA-256 of the canonical JSON of its spec with the config as the
 * kind's schema completed it, worked out at its first use (a reload's plan, a cluster's reconcile; never a
 * single host's start); the spec is let go then. A class, not a literal with a getter: V8 keeps an object
 * literal with an accessor in dictionary mode (about 0.8 KB a job more), where instances of a class share
 * one shape.
 */
class Definition implements JobDefinition {
  readonly id: string;
  readonly kind: PollerKind;
  readonly agent: string;
  readonly schedule: Schedule;
  readonly scheduleSpec: Readonly<ScheduleSpec>;
  readonly config: Readonly<Record<string, unknown>>;
  readonly deliver: Destination;
  readonly failureTo: Destination | null;
  readonly pausedOnBoot: boolean;
  readonly accountName: string | null;
  readonly sourceKey: string;
  /** The spec as loaded (kept by its section anyway), until the fingerprint is worked out. */
  #spec: Readonly<PollerJob> | null;
  #fingerprint = '';

  constructor(fields: DefinitionFields, spec: Readonly<PollerJob>) {
    this.id = fields.id;
    this.kind = fields.kind;
    this.agent = fields.agent;
    this.schedule = fields.schedule;
    this.scheduleSpec = fields.scheduleSpec;
    this.config = fields.config;
    this.deliver = fields.deliver;
    this.failureTo = fields.failureTo;
    this.pausedOnBoot = fields.pausedOnBoot;
    this.accountName = fields.accountName;
    this.sourceKey = fields.sourceKey;
    this.#spec = spec;
  }

  get fingerprint(): string {
    if (this.#spec) {
      const source = { ...this.#spec, config: this.config };
      this.#fingerprint = createHash('sha256').update(canonicalJson(source)).digest('hex');
      this.#spec = null;
    }
    return this.#fingerprint;
  }
}

/** Validates one envelope-valid job; returns the definition or its issues. */
function validateJob(
  job: LoadedJob,
  agents: AgentDirectory,
  registry: KindRegistry,
): { ok: true; definition: JobDefinition } | { ok: false; issues: ConfigIssue[] } {
  const spec = job.spec;
  const issues: ConfigIssue[] = [];
  const kind = registry.get(spec.kind);
  if (!kind) {
    const failed = registry.failedPackages();
    const hint = failed.length
      ? `kind packages that failed to load: ${failed.map((f) => `${f.package} (${f.message})`).join('; ')}`
      : `registered kinds: ${
          registry
            .list()
            .map((k) => k.kind)
            .join(', ') || '(none)'
        }; third-party kinds go in kind_packages`;
    issues.push(job.issueAt(['kind'], `kind "${spec.kind}" is not registered`, hint, 'POLLER_UNKNOWN_KIND'));
  }

  const schedule = parseSchedule(spec.schedule as ScheduleSpec, { phaseKey: spec.id });
  if (!schedule.ok)
    for (const e of schedule.errors)
      issues.push(
        job.issueAt(
          ['schedule', ...(schedule.field ? [schedule.field] : [])],
          e,
          schedule.hint,
          'POLLER_BAD_SCHEDULE',
        ),
      );

  const agent = agents.has(spec.agent);
  if (!agent)
    issues.push(
      job.issueAt(
        ['agent'],
        `agent "${spec.agent}" does not exist`,
        `use one of: ${agents.ids().join(', ') || '(none)'}`,
        'POLLER_UNKNOWN_AGENT',
      ),
    );

  const config = copyConfig(spec.config ?? {}) as Record<string, unknown>;
  let accountName: string | null = null;
  if (kind) {
    const schemaProblems = schemaIssues(job, kind, config);
    issues.push(...schemaProblems);
    const schemaValid = schemaProblems.length === 0;
    if (schemaValid) {
      if (typeof config.message_template === 'string')
        for (const p of validateTemplate(config.message_template, kind.placeholders))
          issues.push(job.issueAt(['config', 'message_template'], p, undefined, 'POLLER_BAD_TEMPLATE'));
      if (kind.validate) {
        let extra: string[];
        try {
          extra = kind.validate(config, { jobId: spec.id, agentId: spec.agent });
        } catch (err) {
          extra = [`kind check failed: ${(err as Error).message}`];
        }
        for (const p of extra) issues.push(job.issueAt(['config'], p, undefined, 'POLLER_INVALID_CONFIG'));
      }
    }
    if (agent && kind.credentials) {
      accountName = agents.accountName(spec.agent, kind.credentials);
      if (!accountName)
        issues.push(
          job.issueAt(
            ['agent'],
            `agent "${spec.agent}" has no "${kind.credentials}" credentials, which kind "${kind.kind}" needs`,
            `add credentials: { ${kind.credentials}: <account> } to agents.d/${spec.agent}.yaml, naming an account of plugins/${kind.credentials}.yaml`,
            'POLLER_NO_CREDENTIALS',
          ),
        );
      else {
        const accountConfig = agents.accountConfig(kind.credentials, accountName);
        if (!accountConfig)
          issues.push(
            job.issueAt(
              ['agent'],
              `agent "${spec.agent}" names ${kind.credentials} account "${accountName}", which plugins/${kind.credentials}.yaml does not define`,
              `define accounts.${accountName} in plugins/${kind.credentials}.yaml`,
              'POLLER_NO_CREDENTIALS',
            ),
          );
        else if (schemaValid)
          issues.push(
            ...accountIssues(job, kind, config, { name: accountName, config: accountConfig }, agents),
          );
      }
    }
  }

  const deliver = config.deliver as Destination | undefined;
  const failureTo = (spec.failure_to as Destination | undefined) ?? null;
  if (agent) {
    const channels = new Set(agents.channels(spec.agent));
    const need: [Segments, string | undefined][] = [
      [['config', 'deliver', 'channel'], deliver?.channel],
      [['failure_to', 'channel'], failureTo?.channel],
    ];
    for (const [path, channel] of need)
      if (channel !== undefined && !channels.has(channel))
        issues.push(
          job.issueAt(
            path,
            `agent "${spec.agent}" has no inbound binding for channel "${channel}"`,
            `add a binding with plugin: ${channel} to agents.d/${spec.agent}.yaml, or use one of: ${[...channels].join(', ') || '(none)'}`,
            'POLLER_NO_BINDING',
          ),
        );
  }

  if (issues.length > 0 || !kind || !schedule.ok || !deliver) return { ok: false, issues };
  const definition = new Definition(
    {
      id: spec.id,
      kind,
      agent: spec.agent,
      schedule: schedule.schedule,
      scheduleSpec: spec.schedule as ScheduleSpec,
      config,
      deliver: destinationOf(deliver),
      failureTo: failureTo ? { channel: failureTo.channel, to: failureTo.to } : null,
      pausedOnBoot: spec.paused_on_boot === true,
      accountName,
      sourceKey: sourceKeyOf(kind, config),
    },
    spec,
  );
  return { ok: true, definition };
}

/** `deliver` itself when it has no other key than `channel` and `to` (the usual case), else those two. */
function destinationOf(deliver: Destination): Destination {
  const keys = Object.keys(deliver);
  const bare = keys.length === 2 && 'channel' in deliver && 'to' in deliver;
  return bare ? deliver : { channel: deliver.channel, to: deliver.to };
}

/**
 * Validates every job of `pollers.yaml`: the envelope issues the section reader found, then each envelope-valid
 * job against its kind, schedule, agent, bindings and credentials. The one entry point boot, reload and
 * `--check-config` call. Never throws.
 */
export function validatePollers(
  pollers: PollersSection | null,
  agents: AgentDirectory,
  registry: KindRegistry,
): ValidationResult {
  const out: ValidationResult = { valid: [], rejected: [] };
  if (!pollers) return out;
  for (const r of pollers.rejected)
    out.rejected.push({ ...(r.id !== undefined ? { id: r.id } : {}), index: r.index, issues: [...r.issues] });
  for (const job of pollers.jobs) {
    try {
      const r = validateJob(job, agents, registry);
      if (r.ok) out.valid.push(r.definition);
      else out.rejected.push({ id: job.spec.id, index: job.index, issues: r.issues });
    } catch (err) {
      out.rejected.push({
        id: job.spec.id,
        index: job.index,
        issues: [
          job.issueAt(
            [],
            `unexpected error while validating: ${(err as Error).message}`,
            undefined,
            'POLLER_INVALID_CONFIG',
          ),
        ],
      });
    }
  }
  out.rejected.sort((a, b) => a.index - b.index);
  return out;
}

/** One line per issue, for plans, logs and the CLI. */
export function issueLines(issues: readonly ConfigIssue[]): string[] {
  return issues.map(formatIssue);
}

/**
 * A copy of a job's config that the kind's schema may fill with defaults: mappings and lists are new, strings
 * and other scalars are shared with the loaded file (`structuredClone` copied every string, about 150 bytes
 * a job that no-one needs twice). Config values are plain YAML data: no cycles, dates or class instances.
 */
function copyConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyConfig);
  if (value === null || typeof value !== 'object') return value;
  // fromEntries defines own properties: a `__proto__` key stays a key, as in the parsed file.
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copyConfig(v)]));
}
