// `agent --check-config` says what the start will say: for each broken configuration, the check and a real
// daemon booted on the same files reject exactly the same jobs, and the check exits 1.
import { describe, it } from 'vitest';
import { baseConfig, runCli, startDaemon, workdir } from './harness.js';

const OK_JOB =
  '    - id: ok\n      kind: rss\n      agent: a\n      schedule: { every_secs: 3600 }\n      config: { feed_url: "https://feeds.example.org/ok", message_template: "{title}", deliver: { channel: log, to: op } }\n';

/** An rss job `id` with `over` replacing parts of it. */
function rss(
  id: string,
  over: { schedule?: string; agent?: string; config?: string; extra?: string; kind?: string } = {},
): string {
  return `    - id: ${id}\n      kind: ${over.kind ?? 'rss'}\n      agent: ${over.agent ?? 'a'}\n${over.schedule === '' ? '' : `      schedule: ${over.schedule ?? '{ every_secs: 3600 }'}\n`}      config: ${over.config ?? '{ feed_url: "https://feeds.example.org/x", message_template: "{title}", deliver: { channel: log, to: op } }'}\n${over.extra ?? ''}`;
}

const hook = (config: string): string =>
  `    - id: bad\n      kind: webhook_poll\n      agent: a\n      schedule: { every_secs: 3600 }\n      config: ${config}\n`;

/** [case, extra pollers.yaml settings, broken jobs, job ids both must reject]. */
const CASES: [string, string, string, string[]][] = [
  ['unknown kind', '', rss('bad', { kind: 'nope', config: '{}' }), ['bad']],
  ['5-field cron', '', rss('bad', { schedule: '{ cron: "*/5 * * * *" }' }), ['bad']],
  ['bad tz', '', rss('bad', { schedule: '{ cron: "0 0 9 * * *", tz: Mars/Base }' }), ['bad']],
  ['never-firing cron', '', rss('bad', { schedule: '{ cron: "0 0 0 30 2 *" }' }), ['bad']],
  ['bad at', '', rss('bad', { schedule: '{ at: "tomorrow morning" }' }), ['bad']],
  ['every_secs 0', '', rss('bad', { schedule: '{ every_secs: 0 }' }), ['bad']],
  ['every_secs not a number', '', rss('bad', { schedule: '{ every_secs: fifteen }' }), ['bad']],
  ['no schedule', '', rss('bad', { schedule: '' }), ['bad']],
  ['unknown agent', '', rss('bad', { agent: 'nobody' }), ['bad']],
  [
    'deliver channel without a binding',
    '',
    rss('bad', {
      config:
        '{ feed_url: "https://feeds.example.org/x", message_template: "{title}", deliver: { channel: chat_b, to: op } }',
    }),
    ['bad'],
  ],
  [
    'failure_to channel without a binding',
    '',
    rss('bad', { extra: '      failure_to: { channel: chat_a, to: ops }\n' }),
    ['bad'],
  ],
  [
    'unknown placeholder',
    '',
    rss('bad', {
      config:
        '{ feed_url: "https://feeds.example.org/x", message_template: "{titel}", deliver: { channel: log, to: op } }',
    }),
    ['bad'],
  ],
  [
    'unknown key in the kind config',
    '',
    rss('bad', {
      config:
        '{ feed_url: "https://feeds.example.org/x", max_per_tik: 5, message_template: "{title}", deliver: { channel: log, to: op } }',
    }),
    ['bad'],
  ],
  [
    'wrong type in the kind config',
    '',
    rss('bad', {
      config:
        '{ feed_url: "https://feeds.example.org/x", max_per_tick: five, message_template: "{title}", deliver: { channel: log, to: op } }',
    }),
    ['bad'],
  ],
  [
    'no deliver',
    '',
    rss('bad', { config: '{ feed_url: "https://feeds.example.org/x", message_template: "{title}" }' }),
    ['bad'],
  ],
  ['duplicate ids', '', `${rss('twin')}${rss('twin')}`, ['twin', 'twin']],
  [
    'private network without allow_private_networks',
    '',
    hook(
      '{ url: "http://10.1.2.3/items", items_path: "", id_field: id, message_template: "{id}", deliver: { channel: log, to: op } }',
    ),
    ['bad'],
  ],
  [
    'unset environment variable in a header',
    '',
    hook(
      '{ url: "https://api.example.org/items", headers: { Authorization: "Bearer ${AGENT_TEST_SURELY_UNSET}" }, items_path: "", id_field: id, message_template: "{id}", deliver: { channel: log, to: op } }',
    ),
    ['bad'],
  ],
  [
    'mail job for an agent without mail credentials',
    '',
    `    - id: bad\n      kind: mail\n      agent: a\n      schedule: { every_secs: 3600 }\n      config: { query: "is:unread", message_template: "{snippet}", deliver: { channel: log, to: op } }\n`,
    ['bad'],
  ],
  [
    'kind package that is not installed',
    '  kind_packages: ["@me/tick-kind"]\n',
    rss('bad', { kind: 'my_tick', config: '{ message_template: "x", deliver: { channel: log, to: op } }' }),
    ['bad'],
  ],
];

/** The job ids named by the check's `error: job <id>: ...` lines. */
const checkRejected = (stderr: string): string[] =>
  [...new Set([...stderr.matchAll(/^error: job (\S+): /gm)].map((m) => m[1]!))].sort();

// Each case boots its own daemon on port 0: they run side by side, so a case may wait for a core a while.
const CASE_TIMEOUT_MS = 90_000;

describe.concurrent('--check-config rejects exactly the jobs the daemon rejects', () => {
  it.for(CASES)('%s', { timeout: CASE_TIMEOUT_MS }, async ([, settings, broken, expected], { expect }) => {
    const w = workdir({
      ...baseConfig(),
      'pollers.yaml': `pollers:\n${settings}  jobs:\n${OK_JOB}${broken}`,
    });
    try {
      const check = await runCli(w, ['--check-config', '--config-dir', 'config']);
      expect(check.code, check.stdout + check.stderr).toBe(1);
      expect(check.stdout).toMatch(
        /^config has errors: 1 valid agent\(s\), 1 of \d+ poller job\(s\) valid$/m,
      );
      const d = await startDaemon(w);
      try {
        const body = (await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as {
          jobs: { id: string }[];
          rejected: { id: string; errors: string[] }[];
        };
        const booted = body.rejected.map((r) => r.id).sort();
        expect(booted).toEqual([...expected].sort());
        expect(body.jobs.map((j) => j.id)).toEqual(['ok']);
        expect(checkRejected(check.stderr)).toEqual([...new Set(expected)].sort());
        // Every reason the daemon logs, the check prints too (same located text).
        for (const r of body.rejected)
          for (const e of r.errors) expect(check.stderr).toContain(`error: job ${r.id}: ${e}`);
      } finally {
        await d.stop('SIGKILL');
      }
    } finally {
      w.cleanup();
    }
  });

  it(
    'the example configuration checks clean and says so',
    { timeout: CASE_TIMEOUT_MS },
    async ({ expect }) => {
      const w = workdir({ ...baseConfig(), 'pollers.yaml': `pollers:\n  jobs:\n${OK_JOB}` });
      try {
        const check = await runCli(w, ['--check-config', '--config-dir', 'config']);
        expect(check.code, check.stderr).toBe(0);
        expect(check.stdout.trim()).toBe('config ok: 1 agent(s), 1 poller job(s)');
        expect(check.stderr).toBe('');
      } finally {
        w.cleanup();
      }
    },
  );
});
