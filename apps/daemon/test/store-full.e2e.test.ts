// The poller state database on a small real tmpfs that fills up under a running daemon: the job's ticks
// turn Transient (metrics, admin API), the store gauge drops, one error is logged for the outage; once space
// is freed the daemon recovers by itself and delivers the items that came meanwhile, once each.
// Mounting needs root (CI runs as root): without it this test fails and says why, it never skips.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonScope } from './harness.js';

const scope = daemonScope();
let feed: Server | null = null;
afterEach(async () => {
  feed?.closeAllConnections();
  await new Promise<void>((r) => (feed ? feed.close(() => r()) : r()));
  feed = null;
});

/** Mounts a tmpfs of `size` at `dir`, or throws with the reason (not root, no mount permission). */
function mountTmpfs(dir: string, size: string): () => void {
  mkdirSync(dir, { recursive: true });
  const uid = process.getuid?.();
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], {
    encoding: 'utf8',
  });
  if (r.status !== 0)
    throw new Error(
      `this test needs a small real tmpfs and could not mount one at ${dir} (uid ${String(uid)}; mount: ${
        r.error?.message ?? r.stderr.trim()
      }). Run it as root (CI does), or in a container allowed to mount.`,
    );
  return () => {
    // Lazy: a daemon killed a moment ago may still hold the files open.
    spawnSync('umount', ['-l', dir]);
  };
}

/** Writes zeros to `file` until the file system is full. */
function fill(file: string): void {
  const fd = openSync(file, 'a');
  const block = Buffer.alloc(16 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  // The last, partial block: the smallest write must fail too.
  const fd2 = openSync(file, 'a');
  try {
    for (;;) writeSync(fd2, Buffer.alloc(512));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd2);
  }
}

const waitUntil = async (what: string, cond: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('poller state database on a full disk', () => {
  it('ticks turn Transient and the store gauge drops; freed space recovers by itself, losing nothing', async () => {
    let titles = ['one', 'two'];
    feed = createServer((_req, res) => {
      const body = titles
        .map(
          (t, i) =>
            `<item><guid>id-${t}</guid><title>${t}</title><link>http://example.test/${t}</link><pubDate>Mon, 0${i + 1} Jun 2026 10:00:00 GMT</pubDate></item>`,
        )
        .join('');
      res.writeHead(200, { 'content-type': 'application/rss+xml' });
      res.end(`<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>${body}</channel></rss>`);
    });
    await new Promise<void>((r) => feed!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed.xml`;
    const w = scope.workdir({
      'llm.yaml':
        'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: key-1234\n',
      'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
      'runtime.yaml': 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n',
      'agents.d/a.yaml':
        'model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n',
      // A high breaker threshold: the retries stay at the job's 1 s interval (a breaker's probe waits 60 s).
      'pollers.yaml': `pollers:\n  state_db: ./state/poller.db\n  default_jitter_ms: 0\n  breaker_threshold: 1000\n  jobs:\n    - id: news\n      kind: rss\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n        feed_url: ${url}\n        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`,
    });
    const stateDir = join(w.root, 'state');
    const unmount = mountTmpfs(stateDir, '8m');
    try {
      const d = await scope.start(w, { AGENT_TEST_MIN_LEASE_TTL_MS: '1500' });
      const deliveries = () =>
        existsSync(join(w.root, 'out.jsonl'))
          ? readFileSync(join(w.root, 'out.jsonl'), 'utf8')
              .split('\n')
              .filter(Boolean)
              .map((l) => (JSON.parse(l) as { text: string }).text)
          : [];
      const metric = (name: string, labels: Record<string, string> = {}) => d.metric(name, labels);
      const job = async () =>
        ((await (await fetch(`${d.adminUrl}/admin/pollers`)).json()) as { jobs: Record<string, unknown>[] })
          .jobs[0]!;
      await d.waitFor(/msg="poller baseline recorded".*job_id=news/);
      await waitUntil(
        'an ok tick after the baseline',
        async () => ((await metric('poller_ticks_total', { job_id: 'news', status: 'ok' })) ?? 0) >= 2,
      );
      expect(await metric('poller_store_healthy')).toBe(1);

      // The disk fills up (the WAL grows until its first checkpoint, so the next commit needs space).
      fill(join(stateDir, 'filler'));
      titles = ['one', 'two', 'three', 'four'];
      await waitUntil(
        'three transient ticks',
        async () => ((await metric('poller_ticks_total', { job_id: 'news', status: 'transient' })) ?? 0) >= 3,
      );
      expect(await metric('poller_store_healthy')).toBe(0);
      expect(await metric('poller_consecutive_errors', { job_id: 'news' })).toBeGreaterThanOrEqual(3);
      expect(await metric('poller_store_errors_total', { operation: 'acquireLease' })).toBeGreaterThanOrEqual(
        3,
      );
      const during = await job();
      expect(during.last_status).toBe('transient');
      expect(during.consecutive_errors).toEqual(expect.any(Number));
      expect(String(during.last_error)).toMatch(/SQLITE_FULL/);
      expect(deliveries()).toEqual([]);
      await new Promise((r) => setTimeout(r, 2000));
      // One error for the outage, not one per tick; the old "scheduler error" line is gone.
      expect(d.count(/level=error.*msg="poller state store failing/)).toBe(1);
      expect(d.count(/poller scheduler error/)).toBe(0);
      const failedTicks = (await metric('poller_ticks_total', { job_id: 'news', status: 'transient' }))!;

      // Space again: the daemon recovers by itself and delivers what came meanwhile, once each.
      rmSync(join(stateDir, 'filler'));
      await waitUntil('the two new items', () => deliveries().length >= 2);
      const recovered = await d.waitFor(/msg="poller state store recovered"/);
      expect(recovered).toMatch(/level=warn/);
      expect(Number(/ticks_failed=(\d+)/.exec(recovered)?.[1])).toBeGreaterThanOrEqual(failedTicks);
      await waitUntil('an ok tick after the recovery', async () => (await job()).last_status === 'ok');
      await new Promise((r) => setTimeout(r, 1500));
      expect(deliveries()).toEqual(['three', 'four']);
      expect(await metric('poller_store_healthy')).toBe(1);
      expect(await metric('poller_consecutive_errors', { job_id: 'news' })).toBe(0);
      expect(d.count(/level=error/)).toBe(1);
      await d.stop('SIGKILL');
    } finally {
      unmount();
    }
  }, 60_000);
});
