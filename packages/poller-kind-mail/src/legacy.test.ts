import { formatIssue, loadConfig, type ConfigSnapshot } from '@agent/config-snapshot';
import { agentYaml, baseFiles, tempConfigPool, type TempDir } from '@agent/config-snapshot/testing';
import { createMemoryLogger } from '@agent/log';
import {
  JOB_ID_MAX_LENGTH,
  legacyJobsYaml,
  pollersOf,
  pollersSectionReader,
  warnLegacyJobs,
} from '@agent/poller-runtime';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { LEGACY_DEPRECATION_MESSAGE, LEGACY_JOB_ID_MAX_LENGTH, mailLegacyJobSource } from './legacy.js';

const pool = tempConfigPool();
afterEach(pool.cleanup);
const make = pool.make;

const sections = [pollersSectionReader({ legacy: [mailLegacyJobSource] })];
const load = (d: TempDir, previous?: ConfigSnapshot) =>
  loadConfig(d.config, { cwd: d.root, env: {}, sections, ...(previous ? { previous } : {}) });

/** The translation alone, with issues as plain records. */
const translate = (value: unknown, agents: { id: string; mailAccount?: string }[]) =>
  mailLegacyJobSource.translate<Record<string, unknown>>(value, {
    agents: agents.map((a) => ({
      id: a.id,
      credentials: (a.mailAccount ? { mail: a.mailAccount } : {}) as Record<string, string>,
    })),
    maxJobIdLength: JOB_ID_MAX_LENGTH,
    issueAt: (path, i) => ({ path, ...i }),
    validate: () => [],
  });
const legacyOf = (s: ConfigSnapshot | null) => (s ? pollersOf(s)?.legacy[0] : undefined) ?? null;

const MAIL_ACCOUNTS = 'accounts:\n  work:\n    user: me@work.example\n  home:\n    user: me@home.example\n';

const LEGACY = `mail_poller:
  interval_secs: 120
  notify: { channel: log, to: op }
  template: "Mail: {snippet}"
  accounts:
    work:
      query: "is:unread label:alerts"
      newer_than: 2d
      max_messages: 10
      delay_ms: 250
      from: ["@alerts.example"]
      extract: { code: "code (\\\\d+)" }
      require: [code]
      mark_read: true
    home: {}
  jobs:
    - name: invoices
      account: home
      query: "subject:invoice"
      interval_secs: 3600
      template: "Invoice: {snippet}"
`;

const withMail = (agents: Record<string, string>) => ({
  ...baseFiles(agents),
  'plugins/mail.yaml': MAIL_ACCOUNTS,
});

const CREDS = 'inferred: the agent whose credentials.mail is this account';

describe('legacy mail poller translation', () => {
  it('translates accounts with a query and jobs into kind: mail jobs, field by field', () => {
    const d = make({
      ...withMail({
        a: agentYaml('credentials:\n  mail: work\n'),
        b: agentYaml('credentials:\n  mail: home\n'),
      }),
      'plugins/mail-poller.yaml': LEGACY,
    });
    const r = load(d);
    expect(r.errors.map(formatIssue)).toEqual([]);
    const pollers = pollersOf(r.snapshot!)!;
    expect(pollers.settings).toMatchObject({ enabled: true, breaker_threshold: 5, default_jitter_ms: 5000 });
    expect(pollers.jobs.map((j) => j.spec)).toEqual([
      {
        id: 'legacy-mail-work',
        kind: 'mail',
        agent: 'a',
        schedule: { every_secs: 120 },
        config: {
          query: 'is:unread label:alerts',
          newer_than: '2d',
          max_per_tick: 10,
          dispatch_delay_ms: 250,
          sender_allowlist: ['@alerts.example'],
          extract: { code: 'code (\\d+)' },
          require_fields: ['code'],
          message_template: 'Mail: {snippet}',
          mark_read_on_dispatch: true,
          deliver: { channel: 'log', to: 'op' },
        },
      },
      {
        id: 'legacy-mail-invoices',
        kind: 'mail',
        agent: 'b',
        schedule: { every_secs: 3600 },
        config: {
          query: 'subject:invoice',
          message_template: 'Invoice: {snippet}',
          deliver: { channel: 'log', to: 'op' },
        },
      },
    ]);
    const t = legacyOf(r.snapshot)!;
    expect(t.ids).toEqual(['legacy-mail-work', 'legacy-mail-invoices']);
    expect(t.jobs.map((j) => [j.id, j.agentRule, j.source])).toEqual([
      ['legacy-mail-work', CREDS, 'mail_poller.accounts.work'],
      ['legacy-mail-invoices', CREDS, 'mail_poller.jobs[0]'],
    ]);
  });

  it('infers the agent: entry, then account, then file, then mail credentials, then the only agent', () => {
    const base = { notify: { channel: 'log', to: 'op' }, template: 't', query: 'q' };
    const agents = [{ id: 'x', mailAccount: 'acc' }, { id: 'y' }];
    const r = translate(
      {
        mail_poller: {
          ...base,
          accounts: { acc: { query: 'q1' }, other: { agent: 'y' } },
          jobs: [
            { name: 'j-entry', agent: 'y' },
            { name: 'j-account', account: 'other' },
            { name: 'j-creds', account: 'acc' },
          ],
        },
      },
      agents,
    );
    expect(r.jobs.map((j) => [j.id, j.agent, j.agentRule])).toEqual([
      ['legacy-mail-acc', 'x', CREDS],
      ['legacy-mail-j-entry', 'y', 'named by the entry'],
      ['legacy-mail-j-account', 'y', 'named by its account'],
      ['legacy-mail-j-creds', 'x', CREDS],
    ]);
    const file = translate({ mail_poller: { ...base, agent: 'y', jobs: [{ name: 'j' }] } }, agents);
    expect(file.jobs[0]).toMatchObject({ agent: 'y', agentRule: 'named by mail_poller.agent' });
    const only = translate({ mail_poller: { ...base, jobs: [{ name: 'j' }] } }, [{ id: 'solo' }]);
    expect(only.jobs[0]).toMatchObject({ agent: 'solo', agentRule: 'inferred: the only agent' });
    const none = translate({ mail_poller: { ...base, jobs: [{ name: 'j' }] } }, agents);
    expect(none.jobs).toEqual([]);
    expect(none.rejected[0]!.issues[0]).toMatchObject({
      code: 'CONFIG_LEGACY_AGENT',
      jobId: 'legacy-mail-j',
    });
    expect(none.rejected[0]!.issues[0]!.hint).toContain('agents: x, y');
  });

  it('uses a 300 s interval when the file names none', () => {
    const r = translate(
      {
        mail_poller: { jobs: [{ name: 'j', query: 'q', template: 't', notify: { channel: 'c', to: 'u' } }] },
      },
      [{ id: 'a' }],
    );
    expect(r.jobs[0]!.job.schedule).toEqual({ every_secs: 300 });
  });

  it('an explicit pollers.yaml job with the same id wins; the others still merge', () => {
    const d = make({
      ...withMail({ a: agentYaml('credentials:\n  mail: work\n') }),
      'plugins/mail-poller.yaml': LEGACY.replace('account: home', 'agent: a'),
      'pollers.yaml':
        'pollers:\n  jobs:\n    - id: legacy-mail-work\n      kind: rss\n      agent: a\n      schedule: { every_secs: 60 }\n      config: { feed_url: "http://x" }\n',
    });
    const r = load(d);
    const jobs = pollersOf(r.snapshot!)!.jobs;
    expect(jobs.map((j) => [j.spec.id, j.spec.kind])).toEqual([
      ['legacy-mail-work', 'rss'],
      ['legacy-mail-invoices', 'mail'],
    ]);
    expect(jobs[1]!.index).toBe(1);
    const t = legacyOf(r.snapshot)!;
    expect(t.ids).toEqual(['legacy-mail-invoices']);
    expect(t.jobs.find((j) => j.id === 'legacy-mail-work')!.overridden).toBe(true);
    expect(parse(legacyJobsYaml(t))).toEqual({ pollers: { jobs: [jobs[1]!.spec] } });
  });

  it('pollers.yaml with enabled: false keeps its settings (the subsystem stays off)', () => {
    const d = make({
      ...withMail({ a: agentYaml('credentials:\n  mail: work\n') }),
      'plugins/mail-poller.yaml': LEGACY.replace('account: home', 'agent: a'),
      'pollers.yaml': 'pollers:\n  enabled: false\n',
    });
    const p = pollersOf(load(d).snapshot!)!;
    expect(p.settings.enabled).toBe(false);
    expect(p.jobs).toHaveLength(2);
  });

  it('an invalid pollers.yaml merges nothing', () => {
    const d = make({
      ...withMail({ a: agentYaml('credentials:\n  mail: work\n') }),
      'plugins/mail-poller.yaml': LEGACY,
      'pollers.yaml': 'pollers:\n  breaker_threshold: many\n',
    });
    const r = load(d);
    expect(pollersOf(r.snapshot!)).toBeNull();
    expect(legacyOf(r.snapshot)).toBeNull();
  });

  it('a bad entry is rejected with a located issue; its siblings still run', () => {
    const d = make({
      ...withMail({ a: agentYaml() }),
      'plugins/mail-poller.yaml': `mail_poller:
  agent: a
  notify: { channel: log, to: op }
  jobs:
    - name: good
      query: q
      template: t
    - name: no-template
      query: q
      template: null
    - name: dup
      query: q
      template: t
    - name: dup
      query: q
      template: t
    - name: orphan
      account: nowhere
      query: q
      template: t
`.replace('      template: null\n', ''),
    });
    const r = load(d);
    const p = pollersOf(r.snapshot!)!;
    expect(p.jobs.map((j) => j.spec.id)).toEqual(['legacy-mail-good']);
    expect(p.rejected.map((x) => x.id)).toEqual([
      'legacy-mail-no-template',
      'legacy-mail-dup',
      'legacy-mail-dup',
      'legacy-mail-orphan',
    ]);
    const missing = r.errors.find((e) => e.jobId === 'legacy-mail-no-template')!;
    expect(missing).toMatchObject({ code: 'CONFIG_MISSING_KEY', path: 'mail_poller.jobs[1]', line: 8 });
    expect(formatIssue(missing)).toContain('mail-poller.yaml');
    expect(r.errors.filter((e) => e.code === 'CONFIG_DUPLICATE_JOB')).toHaveLength(2);
    expect(r.errors.find((e) => e.jobId === 'legacy-mail-orphan')).toMatchObject({
      code: 'CONFIG_UNKNOWN_ACCOUNT',
      path: 'mail_poller.jobs[4].account',
    });
  });

  it('a file that does not match the legacy schema yields issues and no jobs', () => {
    const d = make({
      ...baseFiles(),
      'plugins/mail-poller.yaml': 'mail_poller:\n  interval_secs: soon\n  accounts: []\n',
    });
    const r = load(d);
    expect(pollersOf(r.snapshot!)).toBeNull();
    expect(r.errors.map((e) => e.path)).toEqual(
      expect.arrayContaining(['mail_poller.interval_secs', 'mail_poller.accounts']),
    );
  });

  it('kind issues of a translated job point into the legacy file, at the legacy field', () => {
    const d = make({
      ...withMail({ a: agentYaml('credentials:\n  mail: work\n') }),
      'plugins/mail-poller.yaml': LEGACY,
    });
    const job = pollersOf(load(d).snapshot!)!.jobs[0]!;
    const issue = job.issueAt(['config', 'sender_allowlist', 0], 'bad pattern');
    expect(issue).toMatchObject({
      path: 'mail_poller.accounts.work.from[0]',
      line: 11,
      jobId: 'legacy-mail-work',
    });
    expect(issue.file).toContain('mail-poller.yaml');
  });

  it('warnLegacyJobs logs the deprecation at warn with job_id, per job', () => {
    const d = make({
      ...withMail({
        a: agentYaml('credentials:\n  mail: work\n'),
        b: agentYaml('credentials:\n  mail: home\n'),
      }),
      'plugins/mail-poller.yaml': LEGACY,
    });
    const s = load(d).snapshot!;
    const logger = createMemoryLogger();
    expect(warnLegacyJobs(pollersOf(s)!.legacy, logger)).toEqual([
      'legacy-mail-work',
      'legacy-mail-invoices',
    ]);
    const recs = logger.find(LEGACY_DEPRECATION_MESSAGE);
    expect(recs.map((x) => [x.level, x.fields.job_id])).toEqual([
      ['warn', 'legacy-mail-work'],
      ['warn', 'legacy-mail-invoices'],
    ]);
  });

  it('the translation survives a reload and a reload with pollers.yaml broken keeps the previous one', () => {
    const d = make({
      ...withMail({
        a: agentYaml('credentials:\n  mail: work\n'),
        b: agentYaml('credentials:\n  mail: home\n'),
      }),
      'plugins/mail-poller.yaml': LEGACY,
    });
    const first = load(d).snapshot!;
    d.write('pollers.yaml', 'pollers: [broken\n');
    const second = load(d, first).snapshot!;
    expect(legacyOf(second)?.ids).toEqual(['legacy-mail-work', 'legacy-mail-invoices']);
  });

  it('without a legacy file there is no translation', () => {
    const d = make(baseFiles());
    expect(legacyOf(load(d).snapshot)).toBeNull();
  });
  it('legacy mail-poller names leave room for the legacy-mail- prefix within the job id limit', () => {
    const fits = 'n'.repeat(LEGACY_JOB_ID_MAX_LENGTH - 'legacy-mail-'.length);
    const d = make({
      ...baseFiles({ a: agentYaml('credentials:\n  mail: work\n') }),
      'plugins/mail.yaml': 'accounts:\n  work:\n    user: me@work.example\n',
      'plugins/mail-poller.yaml': `mail_poller:\n  notify: { channel: log, to: op }\n  template: "Mail: {snippet}"\n  jobs:\n    - name: ${fits}\n      account: work\n      query: a\n    - name: ${fits}n\n      account: work\n      query: b\n`,
    });
    const r = load(d);
    const e = r.errors.find((x) => x.path === 'mail_poller.jobs[1].name')!;
    expect(e.message).toBe('is 117 characters long; at most 116 are allowed');
  });

  it('keeps its job id limit equal to the runtime job id limit', () => {
    expect(LEGACY_JOB_ID_MAX_LENGTH).toBe(JOB_ID_MAX_LENGTH);
  });
});
