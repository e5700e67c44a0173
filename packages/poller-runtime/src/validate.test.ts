import { createHash } from 'node:crypto';
import { canonicalJson } from '@agent/poller-core';
import { describe, expect, it } from 'vitest';
import { scriptedKind, job } from '../test/helpers.js';
import { agentDirectory, createKindRegistry, pollersOf, validatePollers } from './index.js';
import { createTestSnapshot, type TestJobSpec } from './testing.js';
import { hashSourceKey } from './source-key.js';

const fake = scriptedKind('fake');
const credKind = scriptedKind('credy', { credentials: 'mail' });

function check(spec: TestJobSpec, failedPackage = false) {
  const registry = createKindRegistry([fake.kind, credKind.kind]);
  if (failedPackage)
    registry.recordPackageFailure({
      package: '@acme/jira-kind',
      code: 'POLLER_KIND_PACKAGE',
      message: 'Cannot find module',
    });
  const snap = createTestSnapshot({
    agents: {
      assistant: { channels: ['chat_a', 'chat_b'], credentials: { mail: 'work' } },
      bare: { channels: ['chat_a'] },
    },
    accounts: { mail: { work: { client_id: 'x' } } },
    jobs: [spec, job('sibling')],
  });
  const r = validatePollers(pollersOf(snap), agentDirectory(snap), registry);
  expect(r.valid.map((d) => d.id)).toContain('sibling'); // siblings always load
  return r;
}

describe('validatePollers', () => {
  it('accepts a valid job with defaults and a source key', () => {
    const r = check(job('ok'));
    const d = r.valid.find((v) => v.id === 'ok')!;
    expect(d.kind.kind).toBe('fake');
    expect(d.deliver).toEqual({ channel: 'chat_a', to: 'u1' });
    // The identity of the source is kind + config; only its hash is stored.
    expect(d.sourceKey).toBe(hashSourceKey('fake:{"source":"s1"}'));
  });

  it("copies the job's config for the kind's defaults: new mappings, the same values", () => {
    const spec = job('ok');
    const d = check(spec).valid.find((v) => v.id === 'ok')!;
    const loaded = pollersOf(
      createTestSnapshot({ agents: { assistant: { channels: ['chat_a'] } }, jobs: [spec] }),
    )!.jobs[0]!.spec.config as Record<string, unknown>;
    expect(d.config).toMatchObject(loaded);
    const containers = (v: unknown): unknown[] =>
      v !== null && typeof v === 'object' ? [v, ...Object.values(v).flatMap(containers)] : [];
    // Every mapping is the definition's own (writable), none is the loaded, frozen one.
    const own = containers(d.config);
    expect(own).toHaveLength(2);
    for (const c of own) expect(Object.isFrozen(c)).toBe(false);
  });

  it('fingerprints a job by the SHA-256 of its canonical JSON, the def_hash a cluster has always stored', () => {
    const d = check(job('ok')).valid.find((v) => v.id === 'ok')!;
    const spec = pollersOf(
      createTestSnapshot({ agents: { assistant: { channels: ['chat_a'] } }, jobs: [job('ok')] }),
    )!.jobs[0]!.spec;
    const expected = canonicalJson({ ...spec, config: d.config, kind: spec.kind });
    expect(d.fingerprint).toBe(createHash('sha256').update(expected).digest('hex'));
    // The same job validated again has the same fingerprint; any change of the definition changes it.
    expect(check(job('ok')).valid.find((v) => v.id === 'ok')!.fingerprint).toBe(d.fingerprint);
    expect(check(job('ok', { paused_on_boot: true })).valid.find((v) => v.id === 'ok')!.fingerprint).not.toBe(
      d.fingerprint,
    );
  });

  it('keeps the fingerprint of a known job: a def_hash stored by an earlier version still matches', () => {
    const snap = createTestSnapshot({
      agents: { assistant: { channels: ['chat_a', 'chat_b'] } },
      jobs: [job('ok', { schedule: { every_secs: 60 }, failure_to: { channel: 'chat_b', to: 'ops' } })],
    });
    const r = validatePollers(pollersOf(snap), agentDirectory(snap), createKindRegistry([fake.kind]));
    expect(r.valid[0]!.fingerprint).toBe('09ce1ca235424508d60f229c3ea6db06265f589275b6041a25e2cc4c5880b19d');
  });

  const cases: {
    name: string;
    spec: TestJobSpec;
    code: string;
    path: string;
    text: RegExp;
    failedPackage?: boolean;
  }[] = [
    {
      name: 'unknown kind',
      spec: job('x', { kind: 'nope' }),
      code: 'POLLER_UNKNOWN_KIND',
      path: 'pollers.jobs[0].kind',
      text: /not registered/,
    },
    {
      name: 'unknown kind names the package that failed to load',
      spec: job('x', { kind: 'jira' }),
      code: 'POLLER_UNKNOWN_KIND',
      path: 'pollers.jobs[0].kind',
      text: /not registered/,
      failedPackage: true,
    },
    {
      name: 'config unknown key',
      spec: job('x', { config: { colour: 'red' } }),
      code: 'POLLER_INVALID_CONFIG',
      path: 'pollers.jobs[0].config.colour',
      text: /unknown key "colour"/,
    },
    {
      name: 'config missing deliver',
      spec: { ...job('x'), config: { message_template: 'hi' } },
      code: 'POLLER_INVALID_CONFIG',
      path: 'pollers.jobs[0].config',
      text: /missing required key "deliver"/,
    },
    {
      name: 'unknown placeholder',
      spec: job('x', { config: { message_template: 'hi {nope}' } }),
      code: 'POLLER_BAD_TEMPLATE',
      path: 'pollers.jobs[0].config.message_template',
      text: /valid placeholders: \{title\}, \{n\}/,
    },
    {
      name: 'template syntax',
      spec: job('x', { config: { message_template: 'hi {title' } }),
      code: 'POLLER_BAD_TEMPLATE',
      path: 'pollers.jobs[0].config.message_template',
      text: /unclosed/,
    },
    {
      name: '5-field cron',
      spec: job('x', { schedule: { cron: '*/5 * * * *' } }),
      code: 'POLLER_BAD_SCHEDULE',
      path: 'pollers.jobs[0].schedule.cron',
      text: /has 5 fields/,
    },
    {
      name: 'never-firing cron',
      spec: job('x', { schedule: { cron: '0 0 0 30 2 *' } }),
      code: 'POLLER_BAD_SCHEDULE',
      path: 'pollers.jobs[0].schedule.cron',
      text: /invalid|never/,
    },
    {
      name: 'invalid tz',
      spec: job('x', { schedule: { cron: '0 0 9 * * *', tz: 'Mars/Base' } }),
      code: 'POLLER_BAD_SCHEDULE',
      path: 'pollers.jobs[0].schedule.tz',
      text: /IANA/,
    },
    {
      name: 'bad at',
      spec: job('x', { schedule: { at: 'next tuesday' } }),
      code: 'POLLER_BAD_SCHEDULE',
      path: 'pollers.jobs[0].schedule.at',
      text: /RFC 3339/,
    },
    {
      name: 'unknown agent',
      spec: job('x', { agent: 'ghost' }),
      code: 'POLLER_UNKNOWN_AGENT',
      path: 'pollers.jobs[0].agent',
      text: /does not exist/,
    },
    {
      name: 'no binding for deliver.channel',
      spec: job('x', { config: { deliver: { channel: 'chat_b', to: 'u' } }, agent: 'bare' }),
      code: 'POLLER_NO_BINDING',
      path: 'pollers.jobs[0].config.deliver.channel',
      text: /no inbound binding for channel "chat_b"/,
    },
    {
      name: 'no binding for failure_to.channel',
      spec: job('x', { failure_to: { channel: 'chat_b', to: 'ops' }, agent: 'bare' }),
      code: 'POLLER_NO_BINDING',
      path: 'pollers.jobs[0].failure_to.channel',
      text: /chat_b/,
    },
    {
      name: 'missing credentials',
      spec: job('x', { kind: 'credy', agent: 'bare' }),
      code: 'POLLER_NO_CREDENTIALS',
      path: 'pollers.jobs[0].agent',
      text: /no "mail" credentials/,
    },
  ];
  for (const c of cases)
    it(`rejects: ${c.name}`, () => {
      const r = check(c.spec, c.failedPackage);
      const rej = r.rejected.find((x) => x.id === 'x')!;
      expect(rej, 'rejected').toBeTruthy();
      const hit = rej.issues.find((i) => i.code === c.code)!;
      expect(hit, JSON.stringify(rej.issues)).toBeTruthy();
      expect(hit.path).toBe(c.path);
      expect(hit.message).toMatch(c.text);
      expect(hit.jobId).toBe('x');
      if (c.failedPackage) expect(hit.hint).toMatch(/@acme\/jira-kind.*Cannot find module/);
    });

  it('keeps envelope-rejected jobs from the snapshot', () => {
    const snap = createTestSnapshot({
      jobs: [job('a')],
      rejected: [{ id: 'dup', index: 3, message: 'job id "dup" is used by 2 jobs' }],
    });
    const r = validatePollers(pollersOf(snap), agentDirectory(snap), createKindRegistry([fake.kind]));
    expect(r.rejected.map((x) => x.id)).toEqual(['dup']);
  });

  it('never throws, also for a kind whose validate throws', () => {
    const k = scriptedKind('fake', {
      validate: () => {
        throw new Error('bug');
      },
    });
    const snap = createTestSnapshot({ jobs: [job('a')] });
    const r = validatePollers(pollersOf(snap), agentDirectory(snap), createKindRegistry([k.kind]));
    expect(r.rejected[0]!.issues[0]!.message).toMatch(/kind check failed: bug/);
  });

  it('runs the kind check that needs the account, with the resolved account, located under config', () => {
    const calls: { job: string; account: unknown }[] = [];
    const k = scriptedKind('credy', {
      credentials: 'mail',
      validateWithAccount: (config, ctx) => {
        calls.push({ job: ctx.jobId, account: ctx.account });
        if (ctx.jobId === 'throws') throw new Error('bug');
        return config.source === 'bad'
          ? [{ path: ['source'], message: 'this account cannot read it (password s3cret)', fix: 'use s2' }]
          : [];
      },
    });
    const snap = createTestSnapshot({
      agents: { assistant: { channels: ['chat_a'], credentials: { mail: 'work' } } },
      accounts: { mail: { work: { provider: 'imap', password: 's3cret' } } },
      secrets: ['s3cret'],
      jobs: [
        job('good', { kind: 'credy' }),
        job('x', { kind: 'credy', config: { source: 'bad' } }),
        job('schema', { kind: 'credy', config: { colour: 'red' } }),
        job('throws', { kind: 'credy' }),
      ],
    });
    const r = validatePollers(pollersOf(snap), agentDirectory(snap), createKindRegistry([k.kind]));
    expect(r.valid.map((d) => d.id)).toEqual(['good']);
    // Not called for a config that fails its schema.
    expect(calls.map((c) => c.job)).toEqual(['good', 'x', 'throws']);
    expect(calls[0]!.account).toEqual({ name: 'work', config: { provider: 'imap', password: 's3cret' } });
    const [issue] = r.rejected.find((x) => x.id === 'x')!.issues;
    expect(issue).toMatchObject({
      code: 'POLLER_INVALID_CONFIG',
      path: 'pollers.jobs[1].config.source',
      message: 'this account cannot read it (password [redacted])',
      hint: 'use s2',
    });
    expect(r.rejected.find((x) => x.id === 'throws')!.issues[0]!.message).toMatch(/kind check failed: bug/);
  });

  it('no pollers file means no jobs', () => {
    const snap = createTestSnapshot();
    expect(validatePollers(null, agentDirectory(snap), createKindRegistry())).toEqual({
      valid: [],
      rejected: [],
    });
  });
});
