// A job id of a megabyte through a real daemon: rejected by its index, located; the job next to it runs,
// and no log line or metric label carries the long id.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { baseConfig, daemonScope, runCli } from './harness.js';

const scope = daemonScope();
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const HUGE = `j${'x'.repeat(1024 * 1024)}`;

describe('a job id over the limit', () => {
  it('is rejected by index with a located reason; its sibling runs; logs and labels stay short', async () => {
    const api = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"items":[]}');
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    close = () => new Promise<void>((r) => api.close(() => r()));
    const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}/items`;
    const job = (id: string) =>
      `    - id: ${id}\n      kind: webhook_poll\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        url: ${url}\n        items_path: items\n        id_field: id\n        allow_private_networks: true\n        message_template: "{id}"\n        deliver: { channel: log, to: op }\n`;
    const w = scope.workdir({
      ...baseConfig(),
      'pollers.yaml': `pollers:\n  default_jitter_ms: 0\n  jobs:\n${job('ok')}${job(HUGE)}`,
    });

    const check = await runCli(w, ['--check-config', '--config-dir', 'config']);
    expect(check.code).toBe(1);
    expect(check.stdout + check.stderr).toMatch(
      /config\/pollers\.yaml:\d+:\d+ pollers\.jobs\[1\]\.id: is 1048577 characters long; at most 128 are allowed \[CONFIG_INVALID_VALUE\]/,
    );
    expect((check.stdout + check.stderr).length).toBeLessThan(10_000);

    const d = await scope.start(w);
    const rejected = await d.waitFor(/level=error msg="poller job rejected"/);
    expect(rejected).toContain('job_id=jobs[1]');
    expect(rejected).toMatch(/pollers\.jobs\[1\]\.id: is 1048577 characters long; at most 128 are allowed/);
    await d.waitFor(/msg="poller baseline recorded".*job_id=ok/);
    expect(await d.metric('poller_ticks_total', { job_id: 'ok', status: 'ok' })).toBeGreaterThan(0);
    expect(await d.metric('poller_jobs_rejected')).toBe(1);

    const list = await runCli(w, ['pollers', 'list', '--json', '--admin-url', d.adminUrl]);
    const body = JSON.parse(list.stdout) as { jobs: { id: string }[]; rejected: { id: string }[] };
    expect(body.jobs.map((j) => j.id)).toEqual(['ok']);
    expect(body.rejected.map((r) => r.id)).toEqual(['jobs[1]']);

    const metrics = await (await fetch(d.metricsUrl)).text();
    expect(metrics).not.toContain('xxxxxxxxxx');
    expect(Math.max(...d.lines.map((l) => l.length))).toBeLessThan(2_000);
  });
});
