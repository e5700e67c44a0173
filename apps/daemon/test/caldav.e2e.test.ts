// The calendar kind over CalDAV against a real Radicale, through a real daemon process: an invalid sync
// token pauses the job and alerts once, and the real CLI's `pollers reset --yes` takes a new baseline.
import { icsEvent, startRadicale, type RadicaleServer } from '@agent/poller-kind-calendar/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonScope, runCli } from './harness.js';
import { deliveries, ENV, providerFiles, waitUntil } from './provider-servers.js';

const scope = daemonScope();
let radicale: RadicaleServer;
beforeAll(async () => {
  radicale = await startRadicale();
});
afterAll(async () => {
  await radicale?.stop();
});

const event = (uid: string, summary: string) =>
  icsEvent({ uid, summary, start: '20261201T100000Z', end: '20261201T110000Z' });

const JOB =
  'pollers:\n  default_jitter_ms: 0\n  jobs:\n    - id: cal\n      kind: calendar\n      agent: a\n      schedule: { every_secs: 1 }\n      failure_to: { channel: log, to: alerts }\n      config:\n        message_template: "{summary} at {start}"\n        deliver: { channel: log, to: op }\n';

describe('calendar over CalDAV through a real daemon (Radicale)', () => {
  it('an invalid sync token (403) pauses the job and alerts once; agent pollers reset re-baselines', async () => {
    expect(await radicale.put('existing', event('existing', 'Existing'))).toBe(201);
    const w = scope.workdir(
      providerFiles(JOB, 'calendar', {
        name: 'home',
        block: {
          provider: 'caldav',
          url: radicale.calendarUrl,
          user: radicale.user,
          password: radicale.password,
          allow_private_networks: true,
        },
      }),
    );
    const d = await scope.start(w, ENV);
    const sent = (to: string) =>
      deliveries(w)
        .filter((x) => x.to === to)
        .map((x) => x.text);
    await d.waitFor(/msg="poller baseline recorded".*job_id=cal/);
    await radicale.put('planning', event('planning', 'Planning'));
    await waitUntil('the new event', () => sent('op').length === 1);
    expect(sent('op')).toEqual(['Planning at 2026-12-01 10:00 UTC']);

    // Radicale answers an unchanged collection without looking the token up: the change after the
    // token is forgotten makes the next sync a 403 valid-sync-token.
    radicale.forgetSyncTokens();
    await radicale.put('paused', event('paused', 'While paused'));
    expect(await d.waitFor(/msg="poller job paused after a permanent error".*job_id=cal/)).toMatch(
      /sync token \(403\)/,
    );
    await waitUntil('the alert', () => sent('alerts').length === 1);
    expect(sent('alerts')[0]).toMatch(/^Poller job cal \(kind calendar\) was paused .*\(403\).*reset/);
    await new Promise((r) => setTimeout(r, 2500));
    expect(sent('alerts')).toHaveLength(1);
    expect(sent('op')).toHaveLength(1);

    const admin = ['--admin-url', d.adminUrl];
    const reset = await runCli(w, ['pollers', 'reset', 'cal', '--yes', ...admin]);
    expect(reset.code, reset.stderr).toBe(0);
    const resume = await runCli(w, ['pollers', 'resume', 'cal', ...admin]);
    expect(resume.code, resume.stderr).toBe(0);
    await waitUntil('a new baseline', () => d.count(/msg="poller baseline recorded".*job_id=cal/) === 2);
    await radicale.put('after', event('after', 'After reset'));
    await waitUntil('the event after the reset', () => sent('op').length === 2);
    await new Promise((r) => setTimeout(r, 1500));
    // The new baseline took in what changed while paused: never delivered. Nothing twice, one alert.
    expect(sent('op')).toEqual(['Planning at 2026-12-01 10:00 UTC', 'After reset at 2026-12-01 10:00 UTC']);
    expect(sent('alerts')).toHaveLength(1);
    expect(d.count(/level=error/)).toBe(1);
  }, 60_000);
});
