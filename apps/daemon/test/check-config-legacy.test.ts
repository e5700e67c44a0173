// `agent --check-config` on legacy job files: the daemon translates them and says what it would run.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkConfig } from '../src/check-config.js';

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

async function check(files: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'check-'));
  roots.push(root);
  const dir = join(root, 'config');
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return { out: await checkConfig(dir, { cwd: root, env: {} }), dir };
}

const BASE = {
  'llm.yaml':
    'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key: k-123456\n',
  'plugins/log.yaml': 'instances:\n  default: {}\n',
  'plugins/mail.yaml': 'accounts:\n  work:\n    client_id: c\n    client_secret: s\n    refresh_token: r\n',
  'agents.d/ops.yaml':
    'model:\n  provider: main\n  name: m\nsystem_prompt: hi\ninbound_bindings:\n  - plugin: log\n    allowed_tools: ["*"]\ncredentials:\n  mail: work\n',
  'agents.d/helper.yaml':
    'model:\n  provider: main\n  name: m\nsystem_prompt: hi\ninbound_bindings:\n  - plugin: log\n    allowed_tools: ["*"]\n',
};

describe('--check-config with the legacy mail poller file', () => {
  it('prints every translated job id and the YAML to paste into pollers.yaml', async () => {
    const { out, dir } = await check({
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
    expect(out.stdout).toEqual([
      // helper has no mail credentials: the daemon would reject its job, and the check says so.
      'config has errors: 2 valid agent(s), 1 of 3 poller job(s) valid',
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
    expect(out.stderr.join('\n')).toMatch(/job legacy-mail-invoices: .*POLLER_NO_CREDENTIALS/);
    expect(out.exitCode).toBe(1);
  });

  it('an overridden legacy job is named and left out of the YAML', async () => {
    const { out } = await check({
      ...BASE,
      'pollers.yaml':
        'pollers:\n  jobs:\n    - id: legacy-mail-work\n      kind: mail\n      agent: ops\n      schedule: { every_secs: 60 }\n      config: { query: q, message_template: t, deliver: { channel: log, to: op } }\n',
      'plugins/mail-poller.yaml':
        'mail_poller:\n  accounts:\n    work: { query: q, template: t, notify: { channel: log, to: op } }\n',
    });
    expect(out.stdout).toContain(
      '  legacy-mail-work (from mail_poller.accounts.work): not used, pollers.yaml defines this id',
    );
    expect(out.stdout.join('\n')).not.toContain('To migrate');
    expect(out.exitCode).toBe(0);
  });
});
