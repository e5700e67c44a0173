import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@agent/config-snapshot';
import { afterEach, describe, expect, it } from 'vitest';
import { renderCheckConfig } from './check-config.js';

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function load(files: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'check-'));
  roots.push(root);
  const dir = join(root, 'config');
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return { result: loadConfig(dir, { cwd: root, env: {} }), dir };
}

const BASE = {
  'llm.yaml':
    'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key: k-123456\n',
  'plugins/log.yaml': 'instances:\n  default: {}\n',
  'plugins/mail.yaml': 'accounts:\n  work:\n    user: me@work.example\n',
  'agents.d/ops.yaml':
    'model:\n  provider: main\n  name: m\nsystem_prompt: hi\ninbound_bindings:\n  - plugin: log\n    allowed_tools: ["*"]\ncredentials:\n  mail: work\n',
  'agents.d/helper.yaml':
    'model:\n  provider: main\n  name: m\nsystem_prompt: hi\ninbound_bindings:\n  - plugin: log\n    allowed_tools: ["*"]\n',
};

describe('renderCheckConfig', () => {
  it('prints every translated job id and the YAML to paste into pollers.yaml', () => {
    const { result, dir } = load({
      ...BASE,
      'plugins/mail-poller.yaml': `mail_poller:
  interval_secs: 600
  notify: { channel: log, to: op }
  template: "Mail: {snippet}"
  accounts:
    work:
      query: "is:unread"
      mark_read: true
  jobs:
    - name: invoices
      agent: helper
      query: "subject:invoice"
    - name: lost
      query: "x"
`,
    });
    const out = renderCheckConfig(result);
    expect(out.stdout).toEqual([
      'config has errors: 2 valid agent(s), 2 poller job(s)',
      '',
      `legacy mail poller ${join(dir, 'plugins', 'mail-poller.yaml')} (deprecated: it no longer runs its own loop):`,
      '  legacy-mail-work (from mail_poller.accounts.work): agent ops, inferred: the agent whose credentials.mail is this account',
      '  legacy-mail-invoices (from mail_poller.jobs[0]): agent helper, named by the entry',
      '  legacy-mail-lost: not translated, cannot tell which agent runs legacy mail job "lost"',
      '',
      'To migrate, add these jobs to pollers.yaml under pollers.jobs (check every inferred agent), then delete the legacy file:',
      '',
      'pollers:',
      '  jobs:',
      '    - id: legacy-mail-work',
      '      kind: mail',
      '      agent: ops',
      '      schedule:',
      '        every_secs: 600',
      '      config:',
      '        query: is:unread',
      '        message_template: "Mail: {snippet}"',
      '        mark_read_on_dispatch: true',
      '        deliver:',
      '          channel: log',
      '          to: op',
      '    - id: legacy-mail-invoices',
      '      kind: mail',
      '      agent: helper',
      '      schedule:',
      '        every_secs: 600',
      '      config:',
      '        query: subject:invoice',
      '        message_template: "Mail: {snippet}"',
      '        deliver:',
      '          channel: log',
      '          to: op',
    ]);
    expect(out.stderr.join('\n')).toContain('CONFIG_LEGACY_AGENT');
    expect(out.exitCode).toBe(1);
  });

  it('a clean config without a legacy file: one line, exit 0', () => {
    const out = renderCheckConfig(load(BASE).result);
    expect(out).toEqual({ stdout: ['config ok: 2 agent(s)'], stderr: [], exitCode: 0 });
  });

  it('an overridden legacy job is named and left out of the YAML', () => {
    const { result } = load({
      ...BASE,
      'pollers.yaml':
        'pollers:\n  jobs:\n    - id: legacy-mail-work\n      kind: mail\n      agent: ops\n      schedule: { every_secs: 60 }\n      config: { query: q }\n',
      'plugins/mail-poller.yaml':
        'mail_poller:\n  accounts:\n    work: { query: q, template: t, notify: { channel: log, to: op } }\n',
    });
    const out = renderCheckConfig(result);
    expect(out.stdout).toContain(
      '  legacy-mail-work (from mail_poller.accounts.work): not used, pollers.yaml defines this id',
    );
    expect(out.stdout.join('\n')).not.toContain('To migrate');
    expect(out.exitCode).toBe(0);
  });

  it('a fatal config: errors on stderr, exit 1', () => {
    const out = renderCheckConfig(load({ ...BASE, 'runtime.yaml': 'admin: 3\n' }).result);
    expect(out.exitCode).toBe(1);
    expect(out.stderr[0]).toMatch(/^error: .*runtime\.yaml/);
  });
});
