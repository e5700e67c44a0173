// The reload preview (dry run) on a real daemon: the same pipeline up to the plan, nothing changed, and the
// real reload right after answers the same plan.
import { mkdirSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentFile, baseConfig, daemonScope, runCli, NO_WATCHER } from './harness.js';

const scope = daemonScope();
let feed: Server | undefined;
afterEach(async () => {
  feed?.closeAllConnections();
  await new Promise<void>((r) => (feed ? feed.close(() => r()) : r()));
  feed = undefined;
});

async function emptyFeed(): Promise<string> {
  feed = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/rss+xml' });
    res.end('<?xml version="1.0"?><rss version="2.0"><channel><title>F</title></channel></rss>');
  });
  await new Promise<void>((r) => feed!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed.xml`;
}

const rssJob = (id: string, url: string, agent = 'a', template = '{title}'): string =>
  `    - id: ${id}\n      kind: rss\n      agent: ${agent}\n      schedule: { every_secs: 3600 }\n      config:\n        feed_url: ${url}\n        allow_private_networks: true\n        message_template: "${template}"\n        deliver: { channel: log, to: op }\n`;
const pollersYaml = (jobs: string[]): string => `pollers:\n  default_jitter_ms: 0\n  jobs:\n${jobs.join('')}`;

/** The series a reload moves: config versions and counters, and every poller series. */
async function reloadSeries(metricsUrl: string): Promise<string[]> {
  const text = await (await fetch(metricsUrl)).text();
  return text.split('\n').filter((l) => /^(config_|runtime_config_version|poller_)/.test(l));
}

describe('reload preview (--dry-run)', () => {
  it('answers the plan over the admin API and the broker, changes nothing, and the reload then agrees', async () => {
    const url = await emptyFeed();
    const files = { ...baseConfig({ agents: ['a', 'c'], runtime: NO_WATCHER }) };
    files['pollers.yaml'] = pollersYaml([rssJob('keep', url), rssJob('chg', url), rssJob('gone', url)]);
    const { w, d } = await scope.boot(files);
    const list = async () =>
      (await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as { jobs: { last_status: string }[] };
    // Every first tick is over: nothing moves on its own for an hour.
    for (let i = 0; (await list()).jobs.some((j) => j.last_status !== 'ok'); i++) {
      expect(i).toBeLessThan(100);
      await new Promise((r) => setTimeout(r, 50));
    }
    const before = { series: await reloadSeries(d.metricsUrl), jobs: await list() };

    w.write('agents.d/c.yaml', agentFile('x', '    bogus: 1\n'));
    // A field that needs a restart: listed, with its reason, file and line, and the rest of a applies.
    w.write('agents.d/a.yaml', agentFile('hello', 'workspace: ./elsewhere\n'));
    w.write(
      'pollers.yaml',
      pollersYaml([
        rssJob('keep', url),
        rssJob('chg', url, 'a', 'Changed {title}'),
        rssJob('new', url),
        rssJob('bad', url, 'nobody'),
      ]),
    );

    const api = await runCli(w, ['pollers', 'reload', '--dry-run', '--json', '--admin-url', d.adminUrl]);
    expect(api.code, api.stderr).toBe(2);
    const preview = JSON.parse(api.stdout);
    expect(preview).toMatchObject({
      add: ['new'],
      replace: ['chg'],
      remove: ['gone'],
      keep: ['keep'],
      rejected: [{ id: 'bad', errors: [expect.stringMatching(/pollers\.yaml:\d+:\d+ .*agent "nobody"/)] }],
      errors: [],
      dry_run: true,
      version: 2,
      agents: {
        applied: ['a'],
        rejected: [{ agent_id: 'c', reason: expect.stringMatching(/agents\.d\/c\.yaml:11:5 .*"bogus"/) }],
        restart_required: [
          {
            agent_id: 'a',
            field: 'workspace',
            reason: 'the agent keeps its running workspace until the daemon restarts',
            file: 'config/agents.d/a.yaml',
            line: 11,
          },
        ],
      },
    });
    const text = await runCli(w, ['pollers', 'reload', '--dry-run', '--admin-url', d.adminUrl]);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe(
      'pollers reload preview (nothing applied): add=1 replace=1 remove=1 keep=1 rejected=1',
    );
    // The agents too, as the JSON has them.
    expect(lines).toContain('  ✓ agent a');
    expect(lines.find((l) => l.startsWith('  ✗ agent c: '))).toMatch(
      /^ {2}✗ agent c: config\/agents\.d\/c\.yaml:11:5 .*"bogus"/,
    );
    expect(lines).toContain(
      '  ! restart required: a workspace (config/agents.d/a.yaml:11): the agent keeps its running workspace until the daemon restarts',
    );

    const cli = await runCli(w, ['reload', '--dry-run', '--config-dir', 'config']);
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stdout).toMatch(/^reload preview \(nothing applied\): would run v2: applied=1 rejected=2 /);
    expect(cli.stdout).toContain('  + job new\n  ~ job chg\n  - job gone\n');
    expect(cli.stdout).toContain('  ! restart required: a workspace (config/agents.d/a.yaml:11): ');
    const ack = JSON.parse(
      (await runCli(w, ['reload', '--dry-run', '--json', '--config-dir', 'config'])).stdout,
    );
    expect(ack).toMatchObject({
      dry_run: true,
      version: 2,
      applied: ['a'],
      pollers: { add: ['new'], replace: ['chg'], remove: ['gone'], keep: ['keep'] },
      rejected_jobs: [{ job_id: 'bad', running: false }],
    });

    // Nothing changed: no version, no job, no series; and nothing was logged as applied.
    expect({ series: await reloadSeries(d.metricsUrl), jobs: await list() }).toEqual(before);
    expect(d.count(/config reload applied|poller reload applied|poller job rejected/)).toBe(0);
    expect(d.count(/msg="config reload previewed" version=2/)).toBe(4);

    const real = await fetch(`${d.adminUrl}/admin/pollers/reload`, { method: 'POST' });
    expect(real.status).toBe(200);
    expect(await real.json()).toEqual({ ...preview, dry_run: false });
    expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(2);
    expect(await d.metric('runtime_config_version', { agent_id: 'c' })).toBe(1);
  });

  it('a preview of unchanged files plans keep for every job and names the running version', async () => {
    const url = await emptyFeed();
    const files = {
      ...baseConfig({ runtime: NO_WATCHER }),
      'pollers.yaml': pollersYaml([rssJob('j', url)]),
    };
    const { d } = await scope.boot(files);
    const res = await fetch(`${d.adminUrl}/admin/pollers/reload?dry_run=1`, { method: 'POST' });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ add: [], replace: [], remove: [], keep: ['j'], dry_run: true, version: 1 });
    const real = await fetch(`${d.adminUrl}/admin/pollers/reload`, { method: 'POST' });
    expect(await real.json()).toEqual({ ...body, dry_run: false });
  });

  it('a package newly listed in kind_packages: the preview rejects its jobs, the reload loads it', async () => {
    const w = scope.workdir({
      ...baseConfig({ runtime: NO_WATCHER }),
      'pollers.yaml': 'pollers:\n  jobs: []\n',
    });
    // Installed next to the config directory, the way an operator installs a kind package; not listed yet.
    mkdirSync(join(w.root, 'node_modules', '@agent'), { recursive: true });
    symlinkSync(
      join(import.meta.dirname, '..', '..', '..', 'examples', 'poller-kind-example'),
      join(w.root, 'node_modules', '@agent', 'example-poller-kind'),
    );
    const d = await scope.start(w);
    w.write(
      'pollers.yaml',
      'pollers:\n  kind_packages: ["@agent/example-poller-kind"]\n  jobs:\n    - id: counter\n      kind: example_counter\n      agent: a\n      schedule: { every_secs: 3600 }\n      config: { message_template: "tick {n}", deliver: { channel: log, to: op } }\n',
    );
    // Loading a package runs its code: a preview does not, so the job's kind is unknown to it.
    const res = await fetch(`${d.adminUrl}/admin/pollers/reload?dry_run=1`, { method: 'POST' });
    const preview = (await res.json()) as { add: string[]; rejected: { id: string; errors: string[] }[] };
    expect(preview.add).toEqual([]);
    expect(preview.rejected).toEqual([
      {
        id: 'counter',
        errors: [expect.stringMatching(/kind "example_counter" is not registered.*\[POLLER_UNKNOWN_KIND\]/)],
      },
    ]);
    expect(d.count(/poller kind package loaded/)).toBe(0);
    // The reload right after loads the package and adds the job: the one documented difference.
    const real = await fetch(`${d.adminUrl}/admin/pollers/reload`, { method: 'POST' });
    const plan = (await real.json()) as { add: string[]; rejected: unknown[] };
    expect(plan).toMatchObject({ add: ['counter'], rejected: [] });
    expect(d.count(/msg="poller kind package loaded" package=@agent\/example-poller-kind/)).toBe(1);
  });
});
