/**
 * The legacy mail poller file `plugins/mail-poller.yaml`. It keeps its schema but no longer runs its own
 * loop: the poller runtime merges the jobs translated here into `pollers.jobs` (an explicit `pollers.yaml`
 * job with the same id wins), logs a deprecation per job, and `agent --check-config` prints the YAML to
 * paste into `pollers.yaml`. This module knows the old fields; the runtime knows the merge.
 */

/** A located issue, as the runtime builds it (opaque here). */
type Issue = object;
type Segments = readonly (string | number)[];

/** What the runtime gives a legacy translation (see `LegacyJobSource` of `@agent/poller-runtime`). */
interface LegacyContext<I extends Issue> {
  readonly agents: readonly { readonly id: string; readonly credentials: Readonly<Record<string, string>> }[];
  readonly maxJobIdLength: number;
  issueAt(path: Segments, issue: { code: string; message: string; hint: string; jobId?: string }): I;
  validate(schema: object, value: unknown): I[];
}

const LEGACY_JOB_ID_PREFIX = 'legacy-mail-';
export const LEGACY_DEPRECATION_MESSAGE = 'deprecation: legacy mail poller job translated at boot';
/** The job id limit of `pollers.yaml` (`JOB_ID_MAX_LENGTH` of the runtime; a test keeps them equal). */
export const LEGACY_JOB_ID_MAX_LENGTH = 128;
/** Interval of the old loop when the file names none. */
const LEGACY_DEFAULT_INTERVAL_SECS = 300;
/** The credentials key (agent `credentials.<key>`, `plugins/<key>.yaml`) of the `mail` kind. */
const LEGACY_MAIL_CREDENTIALS = 'mail';

/** Legacy field -> `mail` job config field. */
const LEGACY_FIELD_MAP = {
  query: 'query',
  newer_than: 'newer_than',
  max_messages: 'max_per_tick',
  delay_ms: 'dispatch_delay_ms',
  from: 'sender_allowlist',
  extract: 'extract',
  require: 'require_fields',
  template: 'message_template',
  mark_read: 'mark_read_on_dispatch',
  notify: 'deliver',
} as const;

type LegacyField = keyof typeof LEGACY_FIELD_MAP;

const NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
// A name becomes the job id `legacy-mail-<name>`, which must stay within the job id limit.
const NAME_MAX = LEGACY_JOB_ID_MAX_LENGTH - LEGACY_JOB_ID_PREFIX.length;

const fieldProperties = {
  query: { type: 'string', minLength: 1, description: 'Mailbox search query.' },
  newer_than: { type: 'string', minLength: 1, description: 'Back-fill limit of the first run, e.g. `2d`.' },
  max_messages: { type: 'integer', minimum: 1, description: 'Messages handled per round at most.' },
  delay_ms: { type: 'integer', minimum: 0, description: 'Pause between two notifications of one round.' },
  from: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Sender allowlist.' },
  extract: {
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'name -> regex; capture group 1 becomes `{name}`.',
  },
  require: { type: 'array', items: { type: 'string' }, description: 'Extract names that must match.' },
  template: { type: 'string', minLength: 1, description: 'Notification text with `{placeholder}` fields.' },
  mark_read: { type: 'boolean', description: 'Mark a message read once notified.' },
  notify: {
    type: 'object',
    additionalProperties: false,
    required: ['channel', 'to'],
    properties: {
      channel: { type: 'string', minLength: 1, maxLength: 64, description: 'Channel plugin name.' },
      to: { type: 'string', minLength: 1, maxLength: 256, description: 'Recipient id on that channel.' },
    },
    description: 'Where notifications go.',
  },
  agent: { type: 'string', minLength: 1, description: 'Agent whose mail credentials and bindings are used.' },
  interval_secs: { type: 'integer', minimum: 1, description: 'Seconds between two rounds.' },
} as const;

/** JSON Schema of the legacy file. */
const legacyMailPollerSchema = {
  $id: 'mail-poller.yaml',
  title: 'Legacy mail poller (plugins/mail-poller.yaml)',
  type: 'object',
  additionalProperties: false,
  required: ['mail_poller'],
  properties: {
    mail_poller: {
      type: 'object',
      additionalProperties: false,
      properties: {
        ...fieldProperties,
        accounts: {
          type: 'object',
          propertyNames: { pattern: NAME_PATTERN, maxLength: NAME_MAX },
          additionalProperties: { type: 'object', additionalProperties: false, properties: fieldProperties },
          description: 'Mail accounts by name; an account with a `query` is polled as one job.',
        },
        jobs: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: {
              name: { type: 'string', pattern: NAME_PATTERN, maxLength: NAME_MAX },
              account: { type: 'string', minLength: 1, maxLength: NAME_MAX },
              ...fieldProperties,
            },
          },
          description: 'Searches; each may name an `account` whose fields it inherits.',
        },
      },
    },
  },
} as const;

type Fields = Partial<Record<LegacyField | 'agent' | 'interval_secs', unknown>>;

/** How the agent of a translated job was found. */
type AgentRule = 'entry' | 'account' | 'file' | 'credentials' | 'only-agent';

/** How each rule is told to the operator (`--check-config`). */
const AGENT_RULE_TEXT: Record<AgentRule, string> = {
  entry: 'named by the entry',
  account: 'named by its account',
  file: 'named by mail_poller.agent',
  credentials: 'inferred: the agent whose credentials.mail is this account',
  'only-agent': 'inferred: the only agent',
};

interface TranslatedLegacyJob {
  id: string;
  /** YAML path of the legacy entry, e.g. `mail_poller.accounts.work`. */
  source: string;
  sourcePath: (string | number)[];
  agent: string;
  /** How the agent was found, in words. */
  agentRule: string;
  /** The job as it belongs in `pollers.yaml` under `pollers.jobs`. */
  job: Record<string, unknown>;
}

/** Agents as far as inference needs them: id and the mail account named in `credentials`. */
interface LegacyAgentInfo {
  id: string;
  mailAccount?: string;
}

interface Entry {
  name: string;
  path: (string | number)[];
  fields: Fields;
  /** Account block whose fields are inherited. */
  account?: { name: string; fields: Fields };
}

function pick(...sources: (Fields | undefined)[]): Fields {
  const out: Fields = {};
  for (const s of sources.toReversed())
    if (s)
      for (const [k, v] of Object.entries(s)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

function inferAgent(
  entry: Entry,
  top: Fields,
  agents: readonly LegacyAgentInfo[],
): { agent: string; rule: AgentRule } | null {
  if (typeof entry.fields.agent === 'string') return { agent: entry.fields.agent, rule: 'entry' };
  if (typeof entry.account?.fields.agent === 'string')
    return { agent: entry.account.fields.agent, rule: 'account' };
  if (typeof top.agent === 'string') return { agent: top.agent, rule: 'file' };
  const account = entry.account?.name ?? entry.name;
  const owners = agents.filter((a) => a.mailAccount === account);
  if (owners.length === 1) return { agent: owners[0]!.id, rule: 'credentials' };
  if (owners.length === 0 && agents.length === 1) return { agent: agents[0]!.id, rule: 'only-agent' };
  return null;
}

/**
 * Translates the legacy file's value. Pure: issues are built by `ctx`, located in the file. Every entry
 * stands alone; an entry that cannot be translated is in `rejected`.
 */
function translateLegacyMailPoller<I extends Issue>(
  value: unknown,
  ctx: LegacyContext<I>,
): { jobs: TranslatedLegacyJob[]; rejected: { id: string; issues: I[] }[]; issues: I[] } {
  const agents: LegacyAgentInfo[] = ctx.agents.map((a) => {
    const account = a.credentials[LEGACY_MAIL_CREDENTIALS];
    return { id: a.id, ...(account ? { mailAccount: account } : {}) };
  });
  const fileIssues = ctx.validate(legacyMailPollerSchema, value);
  if (fileIssues.length > 0) return { jobs: [], rejected: [], issues: fileIssues };
  const root = ((value as { mail_poller?: unknown }).mail_poller ?? {}) as Fields & {
    accounts?: Record<string, Fields>;
    jobs?: (Fields & { name: string; account?: string })[];
  };
  const { accounts = {}, jobs = [], ...top } = root;

  const entries: Entry[] = [];
  for (const [name, fields] of Object.entries(accounts))
    if (fields.query !== undefined) entries.push({ name, path: ['mail_poller', 'accounts', name], fields });
  jobs.forEach((j, i) => {
    const { name, account, ...fields } = j;
    const path = ['mail_poller', 'jobs', i];
    const acct = account === undefined ? undefined : accounts[account];
    entries.push({
      name,
      path,
      fields,
      ...(account !== undefined ? { account: { name: account, fields: acct ?? {} } } : {}),
    });
  });

  const out: TranslatedLegacyJob[] = [];
  const rejected: { id: string; issues: I[] }[] = [];
  const count = new Map<string, number>();
  for (const e of entries) count.set(e.name, (count.get(e.name) ?? 0) + 1);

  for (const e of entries) {
    const id = `${LEGACY_JOB_ID_PREFIX}${e.name}`;
    const at = (segments: Segments, code: string, message: string, hint: string): I =>
      ctx.issueAt(segments, { code, message, hint, jobId: id });
    const issues: I[] = [];
    if ((count.get(e.name) ?? 0) > 1)
      issues.push(
        at(
          e.path,
          'CONFIG_DUPLICATE_JOB',
          `legacy mail job "${e.name}" is defined ${count.get(e.name)} times`,
          'give every account with a query and every job its own name',
        ),
      );
    if (e.account && !accounts[e.account.name])
      issues.push(
        at(
          [...e.path, 'account'],
          'CONFIG_UNKNOWN_ACCOUNT',
          `account "${e.account.name}" is not defined under mail_poller.accounts`,
          'define it under mail_poller.accounts, or remove account:',
        ),
      );
    const f = pick(e.fields, e.account?.fields, top);
    for (const need of ['query', 'template', 'notify'] as const)
      if (f[need] === undefined)
        issues.push(
          at(
            e.path,
            'CONFIG_MISSING_KEY',
            `legacy mail job "${e.name}" has no "${need}" (neither on the entry, its account nor mail_poller)`,
            `add ${need}: to the entry`,
          ),
        );
    const who = inferAgent(e, top, agents);
    if (!who)
      issues.push(
        at(
          e.path,
          'CONFIG_LEGACY_AGENT',
          `cannot tell which agent runs legacy mail job "${e.name}"`,
          agents.length
            ? `add agent: <id> to the entry (agents: ${agents.map((a) => a.id).join(', ')})`
            : 'add an agent file under agents.d/ and name it with agent: <id>',
        ),
      );
    if (issues.length > 0 || !who) {
      rejected.push({ id, issues });
      continue;
    }
    const config: Record<string, unknown> = {};
    for (const [legacy, modern] of Object.entries(LEGACY_FIELD_MAP))
      if (f[legacy as LegacyField] !== undefined) config[modern] = structuredClone(f[legacy as LegacyField]);
    const every = (f.interval_secs as number | undefined) ?? LEGACY_DEFAULT_INTERVAL_SECS;
    out.push({
      id,
      sourcePath: [...e.path],
      source: e.path
        .map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`))
        .join('')
        .slice(1)
        .replace(/\.\[/g, '['),
      agent: who.agent,
      agentRule: AGENT_RULE_TEXT[who.rule],
      job: { id, kind: 'mail', agent: who.agent, schedule: { every_secs: every }, config },
    });
  }
  return { jobs: out, rejected, issues: rejected.flatMap((r) => r.issues) };
}

const MODERN_TO_LEGACY = Object.fromEntries(Object.entries(LEGACY_FIELD_MAP).map(([l, m]) => [m, l]));

/** A path inside the translated job, as a path inside the legacy entry (`config.message_template` -> `template`). */
function legacyPath(p: Segments): Segments {
  if (p[0] === 'config' && typeof p[1] === 'string' && MODERN_TO_LEGACY[p[1]])
    return [MODERN_TO_LEGACY[p[1]]!, ...p.slice(2)];
  if (p[0] === 'agent') return ['agent'];
  if (p[0] === 'schedule') return ['interval_secs'];
  return [];
}

/**
 * `plugins/mail-poller.yaml` as a legacy job source: register it with the poller runtime's
 * `pollersSectionReader({ legacy: [mailLegacyJobSource] })`.
 */
export const mailLegacyJobSource = {
  file: 'plugins/mail-poller.yaml',
  label: 'mail-poller',
  title: 'legacy mail poller',
  deprecation: LEGACY_DEPRECATION_MESSAGE,
  translate: translateLegacyMailPoller,
  legacyPath,
};
