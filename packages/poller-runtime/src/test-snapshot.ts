/** A minimal `ConfigSnapshot` builder for tests and fixtures (no vitest import, so child processes can use it). */
import type { ConfigIssue, ConfigSnapshot } from '@agent/config-snapshot';
import type { PollersSettings } from './pollers-schema.js';
import { POLLERS_SECTION, type LoadedJob, type PollersSection } from './pollers-section.js';

// ---- snapshot --------------------------------------------------------------------------------------

export interface TestJobSpec {
  id: string;
  kind: string;
  agent: string;
  schedule: Record<string, unknown>;
  config: Record<string, unknown>;
  failure_to?: { channel: string; to: string };
  paused_on_boot?: boolean;
}

export interface TestSnapshotOptions {
  /** Agent id -> channels it has bindings for, and its credentials (kind -> account). */
  agents?: Record<string, { channels: string[]; credentials?: Record<string, string> }>;
  jobs?: TestJobSpec[];
  settings?: Partial<PollersSettings>;
  /** Provider-account plugin files: name -> account name -> block. */
  accounts?: Record<string, Record<string, Record<string, unknown>>>;
  version?: number;
  configDir?: string;
  /** Secret values `redact` replaces. */
  secrets?: string[];
  /** Envelope-invalid jobs. */
  rejected?: { id?: string; index: number; message: string }[];
}

/**
 * A minimal `ConfigSnapshot` for tests: agents with bindings, jobs (whose envelopes are taken as valid)
 * and poller settings with the spec defaults. The daemon uses `loadConfig` of `@agent/config-snapshot`.
 */
export function createTestSnapshot(opts: TestSnapshotOptions = {}): ConfigSnapshot {
  const file = 'config/pollers.yaml';
  const issue = (
    index: number,
    jobId: string | undefined,
    path: (string | number)[],
    message: string,
    hint?: string,
    code = 'CONFIG_INVALID_VALUE',
  ): ConfigIssue => ({
    code,
    severity: 'error',
    scope: 'job',
    file,
    path: ['pollers', 'jobs', index, ...path]
      .map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`))
      .join('')
      .replace(/^\./, '')
      .replace(/\.\[/g, '['),
    message,
    ...(hint ? { hint } : {}),
    ...(jobId ? { jobId } : {}),
  });
  const agents = new Map(
    Object.entries(opts.agents ?? { assistant: { channels: ['chat_a', 'chat_b', 'log'] } }).map(([id, a]) => [
      id,
      {
        id,
        version: opts.version ?? 1,
        file: `config/agents.d/${id}.yaml`,
        definition: {
          model: { provider: 'p', name: 'm', max_tokens: 1024, max_tool_rounds: 8 },
          system_prompt: '',
          inbound_bindings: a.channels.map((plugin) => ({
            plugin,
            allowed_tools: ['*'],
            outbound_allowlist: {},
            system_prompt_extra: '',
          })),
          credentials: a.credentials ?? {},
        },
        workspace: `data/agents/${id}/workspace`,
        skillsDir: `data/agents/${id}/skills`,
        transcriptsDir: `data/agents/${id}/transcripts`,
      },
    ]),
  );
  const jobs: LoadedJob[] = (opts.jobs ?? []).map((spec, index) => ({
    index,
    spec: { paused_on_boot: false, ...spec } as LoadedJob['spec'],
    issueAt: (path, message, hint, code) => issue(index, spec.id, [...path], message, hint, code),
  }));
  const plugins = new Map(
    Object.entries(opts.accounts ?? {}).map(([name, accounts]) => [
      name,
      { name, file: `config/plugins/${name}.yaml`, instances: {}, rawInstances: {}, accounts },
    ]),
  );
  const secrets = (opts.secrets ?? []).filter((s) => s.length >= 4);
  const redact = (t: string) => secrets.reduce((acc, s) => acc.split(s).join('[redacted]'), t);
  const settings = {
    enabled: true,
    state_db: './data/poller.db',
    default_jitter_ms: 0,
    lease_ttl_factor: 2,
    tick_timeout_secs: 120,
    failure_alert_cooldown_secs: 3600,
    breaker_threshold: 5,
    kind_packages: [],
    ...opts.settings,
  } as PollersSettings;
  const pollers: PollersSection = {
    file,
    settings,
    jobs,
    rejected: (opts.rejected ?? []).map((r) => ({
      ...(r.id ? { id: r.id } : {}),
      index: r.index,
      issues: [issue(r.index, r.id, [], r.message)],
    })),
    legacy: [],
  };
  return {
    version: opts.version ?? 1,
    configDir: opts.configDir ?? 'config',
    llm: { providers: {} },
    agents,
    sections: new Map([[POLLERS_SECTION, pollers]]),
    broker: {},
    memory: {},
    runtime: {},
    plugins,
    secretFiles: [],
    contentHash: `test-${opts.version ?? 1}`,
    redact,
    provider: () => undefined,
  } as unknown as ConfigSnapshot;
}
