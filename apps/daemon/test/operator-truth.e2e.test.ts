// What the daemon tells its operator, through real processes: every rejection shows in the reload output,
// the exit code, `pollers list` and the metrics; a rejected agent is never "removed"; restart-required
// pollers.yaml fields say so; newly listed kind packages load without a restart; a failed start stops everything.
import { mkdirSync, symlinkSync } from 'node:fs';
import { freeLoopbackPort } from '@agent/poller-core/testing';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  agentFile,
  baseConfig,
  daemonScope,
  runCli,
  SLOW_WATCHER,
  type DaemonProcess,
  type Workdir,
} from './harness.js';

const scope = daemonScope();
const setup = scope.workdir;
const boot = scope.start;

const rssJob = (id: string, extra = ''): string =>
  `    - id: ${id}\n      kind: rss\n      agent: a\n      schedule: { every_secs: 3600 }\n      config:\n        feed_url: https://feeds.example.org/${id}\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n${extra}`;

const reload = (w: Workdir) => runCli(w, ['reload', '--config-dir', 'config']);
const pollers = (w: Workdir, d: DaemonProcess, ...args: string[]) =>
  runCli(w, ['pollers', ...args, '--admin-url', d.adminUrl]);

describe('reload results that do not lie', () => {
  it('a clean boot reports success; a YAML error in pollers.yaml fails every reload command and the gauge', async () => {
    const w = setup({
      ...baseConfig({ runtime: SLOW_WATCHER }),
      'pollers.yaml': `pollers:\n  jobs:\n${rssJob('blog')}`,
    });
    const d = await boot(w);
    expect(await d.metric('config_last_reload_successful')).toBe(1);
    w.write('pollers.yaml', `pollers:\n  jobs:\n${rssJob('blog')}    - id: "broken\n`);

    const r = await reload(w);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stdout).toMatch(/^reload v2: applied=1 rejected=1 elapsed=\d+ms$/m);
    expect(r.stdout).toMatch(/^ {2}✗ config\/pollers\.yaml:\d+:\d+.*\[CONFIG_YAML_SYNTAX\]/m);
    expect(await d.metric('config_last_reload_successful')).toBe(0);
    expect(await d.metric('config_reload_rejected_total')).toBe(1);

    const p = await pollers(w, d, 'reload');
    expect(p.code, p.stdout + p.stderr).toBe(2);
    expect(p.stdout).toMatch(/^pollers reload: add=0 replace=0 remove=0 keep=1 rejected=1$/m);
    expect(p.stdout).toMatch(/✗ config\/pollers\.yaml:\d+:\d+.*YAML/);
    // The running job is untouched.
    expect((await pollers(w, d, 'list')).stdout).toMatch(/^blog +rss/m);

    w.write('pollers.yaml', `pollers:\n  jobs:\n${rssJob('blog')}`);
    expect((await reload(w)).code).toBe(0);
    expect(await d.metric('config_last_reload_successful')).toBe(1);
  });

  it('a rejected job edit shows in the reload output, pollers list and show, and the metrics', async () => {
    const w = setup({
      ...baseConfig({ runtime: SLOW_WATCHER }),
      'pollers.yaml': `pollers:\n  jobs:\n${rssJob('blog')}${rssJob('news')}`,
    });
    const d = await boot(w);
    expect(await d.metric('poller_jobs_rejected')).toBe(0);
    w.write(
      'pollers.yaml',
      `pollers:\n  jobs:\n${rssJob('blog').replace('every_secs: 3600', 'cron: "*/5 * * * *"')}${rssJob('news')}${rssJob('fresh').replace('agent: a', 'agent: nobody')}`,
    );
    const r = await reload(w);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^reload v2: applied=1 rejected=2 /m);
    expect(r.stdout).toMatch(
      /^ {2}✗ job blog: config\/pollers\.yaml:\d+:\d+ pollers\.jobs\[0\]\.schedule\.cron: .*has 5 fields.* \(its previous definition keeps running\)$/m,
    );
    expect(r.stdout).toMatch(
      /^ {2}✗ job fresh: config\/pollers\.yaml:\d+:\d+ .*agent "nobody" does not exist/m,
    );
    expect(await d.metric('poller_jobs_rejected')).toBe(2);
    expect(await d.metric('config_last_reload_successful')).toBe(0);

    const list = await pollers(w, d, 'list');
    expect(list.stdout).toMatch(/^blog \(stale\) +rss/m);
    expect(list.stdout).toMatch(
      /^✗ blog: runs its previous definition; pollers\.yaml entry rejected: .*has 5 fields/m,
    );
    expect(list.stdout).toMatch(/^✗ fresh: rejected, not running: .*nobody/m);
    const show = await pollers(w, d, 'show', 'blog');
    expect(show.stdout).toMatch(/^definition: +stale: config\/pollers\.yaml:\d+:\d+/m);
    const json = JSON.parse((await pollers(w, d, 'list', '--json')).stdout) as {
      jobs: { id: string; definition: string }[];
      rejected: { id: string; running: boolean }[];
    };
    expect(json.jobs.map((j) => [j.id, j.definition])).toEqual([
      ['blog', 'stale'],
      ['news', 'current'],
    ]);
    expect(json.rejected.map((j) => [j.id, j.running])).toEqual([
      ['blog', true],
      ['fresh', false],
    ]);
    // Logged once each, with the located reason.
    expect(
      d.count(/level=error msg="poller job rejected".*job_id=blog reason=".*pollers\.yaml:\d+:\d+/),
    ).toBe(1);
  });

  it('agent pollers reload returns the plan of this reload, by value', async () => {
    const w = setup({
      ...baseConfig({ runtime: SLOW_WATCHER, agents: ['a', 'b'] }),
      'pollers.yaml': `pollers:\n  jobs:\n${rssJob('blog')}`,
    });
    const d = await boot(w);
    w.write('pollers.yaml', `pollers:\n  jobs:\n${rssJob('blog')}${rssJob('news')}`);
    const first = JSON.parse((await pollers(w, d, 'reload', '--json')).stdout) as Record<string, unknown>;
    expect(first).toMatchObject({ add: ['news'], keep: ['blog'], rejected: [], errors: [] });
    // A reload that changes nothing answers its own plan, not the previous one.
    const second = JSON.parse((await pollers(w, d, 'reload', '--json')).stdout) as Record<string, unknown>;
    expect(second).toMatchObject({ add: [], keep: ['blog', 'news'], rejected: [], errors: [] });
    // Every job applies but an agent is rejected: its line is there, and the exit code says so too.
    w.write('agents.d/b.yaml', agentFile().replace('inbound_bindings:', 'inbound_bindingz:'));
    const third = await pollers(w, d, 'reload');
    expect(third.code, third.stdout + third.stderr).toBe(2);
    expect(third.stdout).toMatch(/^pollers reload: add=0 replace=0 remove=0 keep=2 rejected=0$/m);
    expect(third.stdout).toMatch(/^ {2}✗ agent b: config\/agents\.d\/b\.yaml:\d+:\d+\b/m);
  });

  it('the root cause of an agent rejected for its provider is printed: the secret file and its mode', async () => {
    const w = setup(baseConfig({ runtime: SLOW_WATCHER }));
    await boot(w);
    w.write('secrets/key', 'key-from-file-1234\n', 0o644);
    w.write(
      'llm.yaml',
      'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: ${file:./config/secrets/key}\n',
    );
    const r = await reload(w);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^ {2}✗ a: .*provider "main" is invalid in llm\.yaml/m);
    expect(r.stdout).toMatch(
      /^ {2}✗ config\/llm\.yaml:\d+:\d+ .*mode 0644.*\[CONFIG_SECRET_PERMISSIONS\] \(fix: chmod 600 /m,
    );
  });
});

describe('rejected is not removed', () => {
  it('an invalid agent is rejected without restart advice, keeps running, and applies once fixed', async () => {
    const w = setup(baseConfig({ runtime: SLOW_WATCHER, agents: ['a', 'b'] }));
    const d = await boot(w);
    w.write('agents.d/b.yaml', agentFile().replace('inbound_bindings:', 'inbound_bindingz:'));
    const r = await reload(w);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^ {2}✗ b: config\/agents\.d\/b\.yaml:\d+:\d+/m);
    expect(r.stdout).not.toContain('restart required');
    expect(d.count(/restart-required field changed/)).toBe(0);
    expect(await d.metric('runtime_config_version', { agent_id: 'b' })).toBe(1);
    w.write('agents.d/b.yaml', agentFile('fixed'));
    const fixed = await reload(w);
    expect(fixed.code).toBe(0);
    expect(fixed.stdout).toMatch(/^ {2}✓ b$/m);
    expect(await d.metric('runtime_config_version', { agent_id: 'b' })).toBe(3);
  });

  it('an agent invalid at boot is logged at error and applies at the reload that finds it fixed', async () => {
    const files = baseConfig({ runtime: SLOW_WATCHER, agents: ['a', 'b'] });
    files['agents.d/b.yaml'] = 'model: [broken\n';
    const w = setup(files);
    const d = await boot(w);
    expect(
      await d.waitFor(/level=error msg="agent rejected" agent_id=b reason=".*agents\.d\/b\.yaml:\d+:\d+/),
    ).toBeTruthy();
    expect(await d.metric('runtime_config_version', { agent_id: 'b' })).toBeUndefined();
    expect(await d.metric('config_last_reload_successful')).toBe(0);
    w.write('agents.d/b.yaml', agentFile());
    const r = await reload(w);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^ {2}✓ b$/m);
    expect(r.stdout).not.toContain('restart required');
    expect(await d.metric('runtime_config_version', { agent_id: 'b' })).toBe(2);
  });

  it('a boot where no agent is valid exits 1 and names the reason', async () => {
    const files = baseConfig({ runtime: SLOW_WATCHER });
    files['agents.d/a.yaml'] = agentFile().replace('allowed_tools', 'allowed_toolz');
    const w = setup(files);
    const r = await runCli(w, ['--config-dir', 'config']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/level=error msg="agent rejected" agent_id=a reason=".*allowed_toolz/);
    expect(r.stderr).toMatch(/agent: no agent in config is valid \(1 rejected\)/);
    expect(r.stderr).not.toContain('daemon started');
  });

  it('a pollers.yaml that cannot be used refuses the start, and the check says so first', async () => {
    const w = setup({
      ...baseConfig({ runtime: SLOW_WATCHER }),
      'pollers.yaml': `pollers:\n  jobs:\n${rssJob('blog')}    - id: "broken\n`,
    });
    const check = await runCli(w, ['--check-config', '--config-dir', 'config']);
    expect(check.code).toBe(1);
    const refusal =
      /config\/pollers\.yaml cannot be used \(see the error\(s\) above\), so none of what it defines would run/;
    expect(check.stdout + check.stderr).toMatch(refusal);
    const r = await runCli(w, ['--config-dir', 'config']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/config\/pollers\.yaml:\d+:\d+.*\[CONFIG_YAML_SYNTAX\]/);
    expect(r.stderr).toMatch(refusal);
    expect(r.stderr).not.toContain('daemon started');
  });
});

describe('pollers.yaml fields that need a restart, and kind packages', () => {
  it('a changed state_db or enabled is reported as restart required in the ack, the log and the CLI', async () => {
    const w = setup({
      ...baseConfig({ runtime: SLOW_WATCHER }),
      'pollers.yaml': `pollers:\n  jobs:\n${rssJob('blog')}`,
    });
    const d = await boot(w);
    w.write('pollers.yaml', `pollers:\n  state_db: ./data/other.db\n  jobs:\n${rssJob('blog')}`);
    const r = await runCli(w, ['reload', '--config-dir', 'config', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).restart_required).toEqual([
      {
        field: 'pollers.yaml state_db',
        reason: 'the state database is opened at start: the running one stays until the daemon restarts',
        file: 'config/pollers.yaml',
      },
    ]);
    await d.waitFor(
      /level=warn msg="restart-required field changed during reload" field="pollers.yaml state_db"/,
    );
    w.write('pollers.yaml', `pollers:\n  enabled: false\n  jobs:\n${rssJob('blog')}`);
    const off = await reload(w);
    expect(off.stdout).toMatch(
      /^ {2}! restart required: pollers\.yaml enabled \(config\/pollers\.yaml\): the poller subsystem is switched on or off at start: .+$/m,
    );
    const p = await pollers(w, d, 'reload');
    expect(p.code).toBe(1);
    expect(p.stderr).toMatch(/restart required: pollers\.yaml enabled/);
    expect((await pollers(w, d, 'list')).stdout).toMatch(/^blog +rss/m);
  });

  it('a kind package listed while the daemon runs loads at the next reload', async () => {
    const w = setup({
      ...baseConfig({ runtime: SLOW_WATCHER }),
      'pollers.yaml': 'pollers:\n  jobs: []\n',
    });
    const d = await boot(w);
    const job =
      '    - id: counter\n      kind: example_counter\n      agent: a\n      schedule: { every_secs: 3600 }\n      config: { message_template: "tick {n}", deliver: { channel: log, to: op } }\n';
    w.write('pollers.yaml', `pollers:\n  kind_packages: ["@agent/example-poller-kind"]\n  jobs:\n${job}`);
    const missing = await pollers(w, d, 'reload');
    expect(missing.code, missing.stdout + missing.stderr).toBe(2);
    expect(missing.stdout).toMatch(/kind "example_counter" is not registered/);
    expect(missing.stdout).toMatch(
      /is not installed where the daemon looks for it .*npm install @agent\/example-poller-kind/,
    );
    // Installed next to the config directory, the way an operator installs a kind package.
    mkdirSync(join(w.root, 'node_modules', '@agent'), { recursive: true });
    symlinkSync(
      join(import.meta.dirname, '..', '..', '..', 'examples', 'poller-kind-example'),
      join(w.root, 'node_modules', '@agent', 'example-poller-kind'),
    );
    const loaded = await pollers(w, d, 'reload');
    expect(loaded.code, loaded.stdout).toBe(0);
    expect(loaded.stdout).toMatch(/^ {2}\+ counter$/m);
    await d.waitFor(
      /msg="poller kind package loaded" package=@agent\/example-poller-kind kinds=example_counter/,
    );
  });
});

describe('metrics an operator expects', () => {
  it('process metrics, /healthz and /readyz on the metrics port, and the job gauges', async () => {
    const w = setup({
      ...baseConfig({ runtime: SLOW_WATCHER }),
      'pollers.yaml': `pollers:\n  jobs:\n${rssJob('blog', '      paused_on_boot: true\n')}`,
    });
    const d = await boot(w);
    const base = d.metricsUrl.replace(/\/metrics$/, '');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready' }]);
    expect(await d.metric('process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(await d.metric('nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(await d.metric('poller_paused', { job_id: 'blog' })).toBe(1);
    expect(await d.metric('poller_jobs_rejected')).toBe(0);
  });
});

describe('a start that fails half way', () => {
  it('an unopenable state_db stops every part that started and exits 1', async () => {
    // A chat_a webhook listener starts before the pollers: it must not keep the process alive.
    const port = await freeLoopbackPort();
    const files = baseConfig({ runtime: SLOW_WATCHER });
    files['plugins/chat_a.yaml'] =
      `instances:\n  main:\n    phone_number_id: "1"\n    access_token: tok-1234\n    app_secret: sec-1234\n    verify_token: ver-1234\n    listen: 127.0.0.1:${port}\n`;
    files['agents.d/a.yaml'] = agentFile().replace(
      'inbound_bindings:\n',
      'inbound_bindings:\n  - plugin: chat_a\n    instance: main\n',
    );
    files['pollers.yaml'] = 'pollers:\n  state_db: ./data/state-dir\n  jobs: []\n';
    const w = setup(files);
    mkdirSync(join(w.root, 'data', 'state-dir'), { recursive: true });
    const r = await runCli(w, ['--config-dir', 'config']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/poller state database/);
    expect(r.stderr).toMatch(/channel webhook listening/);
    expect(r.stderr).not.toContain('daemon started');
  });
});
