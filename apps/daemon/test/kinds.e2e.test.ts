// webhook_poll, calendar and the legacy mail-poller file through real daemon processes.
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startFakeTokenEndpoint } from '@agent/oauth2/testing';
import { startFakeCalendar } from '@agent/poller-kind-calendar/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startDaemon, workdir, type DaemonProcess, type Workdir } from './harness.js';

const ENV = { AGENT_TEST_MIN_LEASE_TTL_MS: '1500' };
let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

const texts = (w: Workdir): string[] => {
  const f = join(w.root, 'out.jsonl');
  return existsSync(f)
    ? readFileSync(f, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { text: string }).text)
    : [];
};
const waitUntil = async (cond: () => boolean, what: string, ms = 15_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
const files = (pollers: string, agentExtra = ''): Record<string, string> => ({
  'llm.yaml':
    'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: key-1234\n',
  'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
  'runtime.yaml': 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n',
  'agents.d/a.yaml': `model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n${agentExtra}`,
  ...(pollers ? { 'pollers.yaml': pollers } : {}),
});
async function boot(w: Workdir): Promise<DaemonProcess> {
  const d = await startDaemon(w, ENV);
  cleanup.push(() => void d.stop('SIGKILL'));
  return d;
}

describe('webhook_poll through a real daemon', () => {
  it('baselines, carries over past max_per_tick, and re-baselines after agent pollers reset', async () => {
    let items = [1, 2];
    const api: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { items: items.map((n) => ({ id: n, title: `item ${n}` })) } }));
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise<void>((r) => api.close(() => r())));
    const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}/items`;
    const w = workdir(
      files(
        `pollers:\n  default_jitter_ms: 0\n  jobs:\n    - id: hook\n      kind: webhook_poll\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        url: ${url}\n        items_path: data.items\n        id_field: id\n        max_per_tick: 2\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`,
      ),
    );
    cleanup.push(() => w.cleanup());
    const d = await boot(w);
    await d.waitFor(/poller service started/);
    await new Promise((r) => setTimeout(r, 1500));
    expect(texts(w)).toEqual([]);
    items = [1, 2, 3, 4, 5];
    await waitUntil(() => texts(w).length === 3, 'three deliveries');
    expect(texts(w)).toEqual(['item 3', 'item 4', 'item 5']);
    const adminUrl = /admin_url=(\S+)/.exec(d.lines.find((l) => l.includes('daemon started'))!)![1]!;
    items = [1, 2, 3, 4, 5, 6];
    const reset = await runCli(w, ['pollers', 'reset', 'hook', '--yes', '--admin-url', adminUrl]);
    expect(reset.code, reset.stderr).toBe(0);
    await new Promise((r) => setTimeout(r, 2500));
    items = [1, 2, 3, 4, 5, 6, 7];
    await waitUntil(() => texts(w).includes('item 7'), 'item 7');
    // Item 6 appeared right after the reset, so the new baseline took it in: never delivered.
    expect(texts(w).filter((t) => t === 'item 6').length).toBeLessThanOrEqual(1);
    expect(texts(w).slice(0, 3)).toEqual(['item 3', 'item 4', 'item 5']);
    expect(new Set(texts(w)).size).toBe(texts(w).length);
  });
});

describe('calendar through a real daemon', () => {
  it('baselines existing events and delivers a new one once', async () => {
    const tokens = await startFakeTokenEndpoint();
    const cal = await startFakeCalendar({ isValid: (t) => tokens.isValid(t), now: Date.now });
    cleanup.push(async () => {
      await cal.close();
      await tokens.close();
    });
    cal.put({ id: 'old', summary: 'Existing', start: { dateTime: '2026-12-01T10:00:00Z' } });
    const account = Object.entries(tokens.account(cal.url))
      .map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`)
      .join('\n');
    const w = workdir({
      ...files(
        `pollers:\n  default_jitter_ms: 0\n  jobs:\n    - id: cal\n      kind: calendar\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        calendar_id: primary\n        message_template: "{summary} at {start}"\n        deliver: { channel: log, to: op }\n`,
        'credentials:\n  calendar: work\n',
      ),
      'plugins/calendar.yaml': `accounts:\n  work:\n${account}\n`,
    });
    cleanup.push(() => w.cleanup());
    const d = await boot(w);
    await waitUntil(() => cal.requests.length >= 2, 'the baseline and a sync');
    cal.put({ id: 'new', summary: 'Planning', start: { dateTime: '2026-12-02T09:00:00Z' } });
    await waitUntil(() => texts(w).length === 1, 'one delivery');
    await new Promise((r) => setTimeout(r, 2500));
    expect(texts(w)).toHaveLength(1);
    expect(texts(w)[0]).toMatch(/^Planning at /);
    expect(d.count(/level=error/)).toBe(0);
  });
});

describe('a third-party kind package through a real daemon', () => {
  it('is loaded from kind_packages and runs its job; a broken package rejects only its own jobs', async () => {
    const w = workdir(
      files(
        `pollers:\n  default_jitter_ms: 0\n  kind_packages: ["@agent/example-poller-kind", "@acme/no-such-kind"]\n  jobs:\n    - id: counter\n      kind: example_counter\n      agent: a\n      schedule: { every_secs: 1 }\n      config: { message_template: "tick {n}", deliver: { channel: log, to: op } }\n    - id: orphan\n      kind: acme_thing\n      agent: a\n      schedule: { every_secs: 60 }\n      config: {}\n`,
      ),
    );
    cleanup.push(() => w.cleanup());
    // Installed next to the config directory, the way an operator installs a kind package.
    mkdirSync(join(w.root, 'node_modules', '@agent'), { recursive: true });
    symlinkSync(
      join(import.meta.dirname, '..', '..', '..', 'examples', 'poller-kind-example'),
      join(w.root, 'node_modules', '@agent', 'example-poller-kind'),
    );
    const d = await boot(w);
    await d.waitFor(/poller kind package failed to load.*@acme\/no-such-kind/);
    expect(await d.waitFor(/level=error msg="poller job rejected".*job_id=orphan/)).toMatch(/acme_thing/);
    expect(d.count(/msg="poller job rejected"/)).toBe(1);
    await waitUntil(() => texts(w).length >= 2, 'two counter deliveries');
    expect(texts(w).slice(0, 2)).toEqual(['tick 2', 'tick 3']);
  });
});

describe('legacy mail-poller file through a real daemon', () => {
  it('translates each job at boot with a deprecation warning; --check-config prints the YAML to paste', async () => {
    const w = workdir({
      ...files('', 'credentials:\n  mail: work\n'),
      'plugins/mail.yaml':
        'accounts:\n  work:\n    client_id: cid\n    client_secret: csecret-1234\n    refresh_token: rtoken-1234\n    token_url: http://127.0.0.1:9/token\n    api_base_url: http://127.0.0.1:9\n    allow_private_networks: true\n',
      'plugins/mail-poller.yaml':
        'mail_poller:\n  interval_secs: 3600\n  notify: { channel: log, to: op }\n  template: "Mail from {from}: {snippet}"\n  accounts:\n    work:\n      query: "is:unread label:alerts"\n',
    });
    cleanup.push(() => w.cleanup());
    const check = await runCli(w, ['--check-config', '--config-dir', 'config']);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('legacy-mail-work');
    expect(check.stdout).toMatch(/kind: mail/);
    const d = await boot(w);
    const line = await d.waitFor(/level=warn msg="deprecation: legacy mail poller job translated at boot"/);
    expect(line).toContain('job_id=legacy-mail-work');
    expect(d.lines.join('\n')).not.toContain('csecret-1234');
  });
});
