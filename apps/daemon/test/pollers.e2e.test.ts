// Poller jobs through real daemon processes: rss and mail against loopback fakes, deliveries observed
// through the `log` channel's JSON-lines file, and crashes made with SIGKILL.
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startFakeTokenEndpoint, type FakeTokenEndpoint } from '@agent/oauth2/testing';
import { startFakeGmail, type FakeGmail } from '@agent/poller-kind-mail/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { startDaemon, workdir, type DaemonProcess, type Workdir } from './harness.js';

const ENV = { AGENT_TEST_MIN_LEASE_TTL_MS: '1500' };
let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

function deliveries(w: Workdir): { to: string; text: string }[] {
  const f = join(w.root, 'out.jsonl');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { to: string; text: string });
}

const waitUntil = async (cond: () => boolean, ms = 15_000, what = 'condition'): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

function baseFiles(pollers: string, extraAgent = ''): Record<string, string> {
  return {
    'llm.yaml':
      'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: key-1234\n',
    'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
    'runtime.yaml': 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n',
    'agents.d/a.yaml': `model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n${extraAgent}`,
    'pollers.yaml': pollers,
  };
}

async function boot(w: Workdir): Promise<DaemonProcess> {
  const d = await startDaemon(w, ENV);
  cleanup.push(() => void d.stop('SIGKILL'));
  return d;
}

describe('crash recovery of long-interval jobs', () => {
  it('a daily job killed mid-tick is ticked within seconds of the restart, not after its 48 h lease', async () => {
    let requests = 0;
    const feed: Server = createServer((_req, res) => {
      requests++;
      // The first fetch never answers: the daemon is killed while the tick holds its lease.
      if (requests === 1) return;
      res.writeHead(200, { 'content-type': 'application/rss+xml' });
      res.end('<?xml version="1.0"?><rss version="2.0"><channel><title>F</title></channel></rss>');
    });
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
    cleanup.push(() => {
      feed.closeAllConnections();
      return new Promise<void>((r) => feed.close(() => r()));
    });
    const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/daily.xml`;
    const w = workdir(
      baseFiles(
        `pollers:\n  default_jitter_ms: 0\n  jobs:\n    - id: daily\n      kind: rss\n      agent: a\n      schedule: { every_secs: 86400 }\n      config:\n        feed_url: ${url}\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`,
      ),
    );
    cleanup.push(() => w.cleanup());
    // No test knob for the lease TTL here: the real one (2 x 24 h) applies.
    const d1 = await startDaemon(w);
    cleanup.push(() => void d1.stop('SIGKILL'));
    await waitUntil(() => requests === 1, 10_000, 'the first fetch');
    await d1.stop('SIGKILL');
    const started = Date.now();
    const d2 = await startDaemon(w);
    cleanup.push(() => void d2.stop('SIGKILL'));
    const taken = await d2.waitFor(/msg="poller lease taken over: its holder process is gone"/);
    expect(taken).toMatch(/job_id=daily previous_holder=\S+:\d+:[0-9a-f]+\.\d+:[0-9a-f]+/);
    await d2.waitFor(/msg="poller baseline recorded".*job_id=daily/, 10_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(requests).toBe(2);
    expect(await d2.metric('poller_lease_takeovers_total', { job_id: 'daily' })).toBe(1);
  });
});

describe('a stale lease holder', () => {
  it('a daemon stopped between two sends past its lease sends nothing after SIGCONT', async () => {
    let items: string[] = [];
    const feed: Server = createServer((_req, res) => {
      const body = items
        .map(
          (t, i) =>
            `<item><guid>id-${t}</guid><title>${t}</title><pubDate>Mon, 0${i + 1} Jun 2026 10:00:00 GMT</pubDate></item>`,
        )
        .join('');
      res.writeHead(200, { 'content-type': 'application/rss+xml' });
      res.end(`<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>${body}</channel></rss>`);
    });
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise<void>((r) => feed.close(() => r())));
    const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/f.xml`;
    // Two daemons on one state database; the first spaces its two sends by 2 s.
    const shared = workdir({});
    cleanup.push(() => shared.cleanup());
    const pollers = `pollers:\n  default_jitter_ms: 0\n  state_db: ${join(shared.root, 'state.db')}\n  jobs:\n    - id: news\n      kind: rss\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        feed_url: ${url}\n        allow_private_networks: true\n        dispatch_delay_ms: 2000\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`;
    const wa = workdir(baseFiles(pollers));
    const wb = workdir(baseFiles(pollers));
    cleanup.push(() => wa.cleanup());
    cleanup.push(() => wb.cleanup());
    const a = await boot(wa);
    await a.waitFor(/msg="poller baseline recorded"/);
    items = ['one', 'two'];
    await waitUntil(() => deliveries(wa).length === 1, 10_000, 'the first send');
    // Between the two sends: stop the holder and let its 2 s lease run out while another daemon takes over.
    a.proc.kill('SIGSTOP');
    const b = await boot(wb);
    await waitUntil(() => deliveries(wb).length === 1, 15_000, 'the second daemon to deliver the rest');
    expect(deliveries(wb).map((x) => x.text)).toEqual(['two']);
    a.proc.kill('SIGCONT');
    // It notices at once and stops: a failed renewal aborts its wait (`stopped before delivering`), or the
    // trust window, checked before the send, has run out (`lost its lease`): whichever its timers run first.
    await a.waitFor(
      /msg="poller tick (stopped before delivering every item|lost its lease; its writes are discarded)"/,
      10_000,
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(deliveries(wa).map((x) => x.text)).toEqual(['one']);
    expect(b.count(/level=error/)).toBe(0);
  });
});

describe('rss through a real daemon', () => {
  it('baselines, delivers new items oldest first, and repeats nothing across a SIGKILL restart', async () => {
    let items = ['one', 'two'];
    let served = 0;
    const feed: Server = createServer((_req, res) => {
      served++;
      const body = items
        .map(
          (t, i) =>
            `<item><guid>id-${t}</guid><title>${t}</title><link>http://example.test/${t}</link><pubDate>Mon, 0${i + 1} Jun 2026 10:00:00 GMT</pubDate></item>`,
        )
        .join('');
      res.writeHead(200, { 'content-type': 'application/rss+xml' });
      res.end(`<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>${body}</channel></rss>`);
    });
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise<void>((r) => feed.close(() => r())));
    const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed.xml`;
    const w = workdir(
      baseFiles(
        `pollers:\n  default_jitter_ms: 0\n  jobs:\n    - id: news\n      kind: rss\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        feed_url: ${url}\n        allow_private_networks: true\n        message_template: "{title} {link}"\n        deliver: { channel: log, to: op }\n`,
      ),
    );
    cleanup.push(() => w.cleanup());
    const d1 = await boot(w);
    await waitUntil(() => served >= 2, 10_000, 'two fetches');
    expect(deliveries(w)).toEqual([]);
    items = ['one', 'two', 'three', 'four'];
    await waitUntil(() => deliveries(w).length === 2, 10_000, 'two deliveries');
    expect(deliveries(w).map((x) => x.text)).toEqual([
      'three http://example.test/three',
      'four http://example.test/four',
    ]);
    await d1.stop('SIGKILL');
    items = ['one', 'two', 'three', 'four', 'five'];
    const d2 = await boot(w);
    await waitUntil(() => deliveries(w).length >= 3, 15_000, 'the fifth item');
    await new Promise((r) => setTimeout(r, 1500));
    expect(deliveries(w).map((x) => x.text.split(' ')[0])).toEqual(['three', 'four', 'five']);
    expect(d2.count(/level=error/)).toBe(0);
  });
});

describe('pollers.yaml saved while the daemon runs', () => {
  it('is applied like agent pollers reload: the plan is logged and a rejected job is named', async () => {
    const feed: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/rss+xml' });
      res.end('<?xml version="1.0"?><rss version="2.0"><channel><title>F</title></channel></rss>');
    });
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise<void>((r) => feed.close(() => r())));
    const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/f`;
    const job = (id: string): string =>
      `    - id: ${id}\n      kind: rss\n      agent: a\n      schedule: { every_secs: 3600 }\n      config:\n        feed_url: ${url}\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`;
    const w = workdir(baseFiles(`pollers:\n  jobs:\n${job('one')}`));
    cleanup.push(() => w.cleanup());
    const d = await boot(w);
    w.writeByRename('pollers.yaml', `pollers:\n  jobs:\n${job('one')}${job('two')}`);
    const line = await d.waitFor(/msg="poller reload applied"/, 5000);
    expect(line).toMatch(/add=two/);
    expect(line).toMatch(/keep=1/);
    w.writeByRename(
      'pollers.yaml',
      `pollers:\n  jobs:\n${job('two')}    - id: bad\n      kind: nope\n      agent: a\n      schedule: { every_secs: 60 }\n      config: {}\n`,
    );
    const second = await d.waitFor(/msg="poller reload applied".*remove=one/, 5000);
    expect(second).toMatch(/keep=1 rejected=1/);
    expect(
      await d.waitFor(
        /level=error msg="poller job rejected".*job_id=bad reason=".*pollers.yaml:\d+:\d+ .*nope/,
      ),
    ).toBeTruthy();
    expect(d.count(/msg="poller job rejected"/)).toBe(1);
  });
});

describe('mail through a real daemon', () => {
  it('a SIGKILL between delivery and mark-read repeats nothing', async () => {
    const tokens: FakeTokenEndpoint = await startFakeTokenEndpoint();
    const gmail: FakeGmail = await startFakeGmail({ isValid: (t) => tokens.isValid(t), now: Date.now });
    cleanup.push(async () => {
      await gmail.close();
      await tokens.close();
    });
    const account = tokens.account(gmail.url);
    const accountYaml = Object.entries(account)
      .map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`)
      .join('\n');
    const now = Date.now();
    gmail.add(
      { id: 'm1', from: 'shop@example.test', subject: 'Order 1', text: 'first', at: now - 3000 },
      { id: 'm2', from: 'shop@example.test', subject: 'Order 2', text: 'second', at: now - 2000 },
    );
    gmail.hang('batchModify');
    const w = workdir({
      ...baseFiles(
        `pollers:\n  default_jitter_ms: 0\n  jobs:\n    - id: orders\n      kind: mail\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        query: "from:shop@example.test"\n        dispatch_delay_ms: 0\n        message_template: "{subject}"\n        deliver: { channel: log, to: op }\n`,
        'credentials:\n  mail: work\n',
      ),
      'plugins/mail.yaml': `accounts:\n  work:\n${accountYaml}\n`,
    });
    cleanup.push(() => w.cleanup());
    const d1 = await boot(w);
    // Mail back-fills on its first tick; the first delivery is committed, then mark-read hangs.
    await waitUntil(
      () => deliveries(w).length >= 1 && gmail.count('batchModify') >= 1,
      15_000,
      'a delivery and a mark-read call',
    );
    await d1.stop('SIGKILL');
    const before = deliveries(w).map((x) => x.text);
    gmail.unhang('batchModify');
    gmail.add({ id: 'm3', from: 'shop@example.test', subject: 'Order 3', text: 'third', at: Date.now() });
    await boot(w);
    await waitUntil(() => deliveries(w).length >= 3, 20_000, 'three deliveries');
    await new Promise((r) => setTimeout(r, 2000));
    const texts = deliveries(w).map((x) => x.text);
    expect(before[0]).toBe('Order 1');
    expect(texts).toEqual(['Order 1', 'Order 2', 'Order 3']);
    expect(new Set(texts).size).toBe(texts.length);
  });
});
