// Secret values stay out of the log and the state db of a real daemon; source keys written before they
// were hashed keep their jobs' cursors.
import { chownSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { webhookPollerKind, type WebhookConfig } from '@agent/poller-kind-webhook';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { baseConfig, daemonScope, LLM, runCli, type Workdir } from './harness.js';
import { hashSourceKey } from '@agent/poller-runtime';

const scope = daemonScope();
/** The kind's identity of a source; it reads only the source fields of a job config. */
const webhookSourceKey = (c: Partial<WebhookConfig>): string =>
  webhookPollerKind.sourceKey!(c as WebhookConfig);
let servers: Server[] = [];
afterEach(async () => {
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  servers = [];
});

/** A JSON endpoint that answers `{items}` on the paths `accept` allows and 404 elsewhere; it records paths. */
async function api(accept: (path: string) => boolean, items: () => number[]) {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    if (!accept(req.url ?? '')) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no such path');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ items: items().map((n) => ({ id: n, title: `item ${n}` })) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

const files = (jobConfig: string): Record<string, string> => ({
  'llm.yaml':
    'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: key-1234\n',
  'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
  'runtime.yaml':
    'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  debounce_ms: 200\n',
  'agents.d/a.yaml':
    'model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\n',
  'pollers.yaml': `pollers:\n  default_jitter_ms: 0\n  jobs:\n    - id: hook\n      kind: webhook_poll\n      agent: a\n      schedule: { every_secs: 1 }\n      config:\n${jobConfig}        allow_private_networks: true\n        message_template: "{title}"\n        deliver: { channel: log, to: op }\n`,
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

/** Every byte of the state db (WAL included). */
function stateBytes(w: Workdir): string {
  const db = join(w.root, 'data', 'poller.db');
  return [db, `${db}-wal`]
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f).toString('latin1'))
    .join('');
}

function sourceKeyRow(w: Workdir): string | null {
  const db = new Database(join(w.root, 'data', 'poller.db'), { readonly: true });
  try {
    const row = db.prepare('SELECT source_key FROM poll_state WHERE job_id = ?').get('hook') as
      { source_key: string | null } | undefined;
    return row?.source_key ?? null;
  } finally {
    db.close();
  }
}

describe('secret values in a webhook URL path', () => {
  it('appear nowhere in the debug log, the state db, metrics or admin answers, before and after a rotation', async () => {
    const TOKEN = 'sntl-env-token-5d1e';
    const SEG_A = 'sntl-file-seg-a7c3';
    const SEG_B = 'sntl-file-seg-b8d4';
    const sentinels = [TOKEN, SEG_A, SEG_B];
    const server = await api(
      (p) => p === `/${TOKEN}/${SEG_A}/items` || p === `/${TOKEN}/${SEG_B}/items`,
      () => [1, 2],
    );
    const w = scope.workdir(
      files(
        `        url: ${server.base}/\${HOOK_TOKEN}/\${file:./secrets/seg}/items\n        items_path: items\n        id_field: id\n`,
      ),
    );
    w.write('../secrets/seg', `${SEG_A}\n`, 0o600);
    const d = await scope.start(w, { HOOK_TOKEN: TOKEN }, ['--log-level', 'debug']);

    // The guarded client's debug line names the URL; its path is where the secrets are.
    const done = await d.waitFor(/msg="http request done"/);
    expect(done).toContain(`url=${server.base}/[redacted]/[redacted]/items`);
    await waitUntil(() => server.paths.length >= 2, 'two requests');

    // Rotated on disk: the watcher reloads, the job runs with the new value, which is hidden as well.
    const from = d.lines.length;
    writeFileSync(join(w.root, 'secrets', 'seg'), `${SEG_B}\n`, { mode: 0o600 });
    await d.waitFor(/msg="config reload applied"/, 10_000, from);
    await waitUntil(() => server.paths.some((p) => p.includes(SEG_B)), 'a request with the rotated value');
    const at = d.lines.length;
    await d.waitFor(/msg="http request done"/, 10_000, at);

    const metrics = await (await fetch(d.metricsUrl)).text();
    const show = await runCli(w, ['pollers', 'show', 'hook', '--json', '--admin-url', d.adminUrl]);
    expect(show.code, show.stderr).toBe(0);
    expect(await d.stop()).toBe(0);

    const log = d.lines.join('\n');
    expect(log).toMatch(/level=debug/);
    const key = sourceKeyRow(w);
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const s of sentinels) {
      expect(log, `log holds ${s}`).not.toContain(s);
      expect(stateBytes(w), `state db holds ${s}`).not.toContain(s);
      expect(metrics).not.toContain(s);
      expect(show.stdout + show.stderr).not.toContain(s);
    }
  });
});

describe('source keys stored before they were hashed', () => {
  it('a row holding the old key of the same source keeps its cursor and seen ids; the key is rewritten', async () => {
    let items = [1, 2];
    const server = await api(
      (p) => p === '/v1/items',
      () => items,
    );
    const url = `${server.base}/v1/items`;
    const w = scope.workdir(files(`        url: ${url}\n        items_path: items\n        id_field: id\n`));
    const first = await scope.start(w);
    await first.waitFor(/msg="poller baseline recorded"/);
    expect(await first.stop()).toBe(0);

    // The key as earlier versions wrote it: the kind name and the kind's identity of the source, in clear.
    const oldKey = `webhook_poll:${webhookSourceKey({ url, method: 'GET', items_path: 'items', id_field: 'id' })}`;
    expect(sourceKeyRow(w)).toBe(hashSourceKey(oldKey));
    const db = new Database(join(w.root, 'data', 'poller.db'));
    db.prepare('UPDATE poll_state SET source_key = ? WHERE job_id = ?').run(oldKey, 'hook');
    db.close();

    // A new item while the daemon is down: a job that kept its state delivers it; one that baselined
    // again would swallow it.
    items = [1, 2, 3];
    const second = await scope.start(w);
    await waitUntil(() => texts(w).length >= 1, 'the delivery of item 3');
    expect(texts(w)).toEqual(['item 3']);
    expect(second.count(/poller source changed/)).toBe(0);
    expect(second.count(/poller baseline recorded/)).toBe(0);
    expect(await second.stop()).toBe(0);
    expect(sourceKeyRow(w)).toBe(hashSourceKey(oldKey));
  });

  it('a row holding the old key of another source baselines again', async () => {
    let items = [1, 2];
    const server = await api(
      (p) => p === '/v1/items' || p === '/v2/items',
      () => items,
    );
    const w = scope.workdir(
      files(`        url: ${server.base}/v2/items\n        items_path: items\n        id_field: id\n`),
    );
    const first = await scope.start(w);
    await first.waitFor(/msg="poller baseline recorded"/);
    expect(await first.stop()).toBe(0);
    const oldKey = `webhook_poll:${webhookSourceKey({ url: `${server.base}/v1/items`, method: 'GET', items_path: 'items', id_field: 'id' })}`;
    const db = new Database(join(w.root, 'data', 'poller.db'));
    db.prepare('UPDATE poll_state SET source_key = ? WHERE job_id = ?').run(oldKey, 'hook');
    db.close();

    items = [1, 2, 3];
    const second = await scope.start(w);
    await second.waitFor(/poller source changed: the job will baseline again.*job_id=hook/);
    await second.waitFor(/msg="poller baseline recorded"/);
    expect(texts(w)).toEqual([]);
  });
});

describe('a secret file owned by another user', () => {
  it('rejects what uses it with a located reason and a chown fix; giving it back applies it without agent reload', async () => {
    const KEY = 'sk-owner-test-4c1a';
    const w = scope.workdir({ ...baseConfig(), 'llm.yaml': LLM('${file:./secrets/key}') });
    w.write('../secrets/key', `${KEY}\n`, 0o600);
    const key = join(w.root, 'secrets', 'key');
    const d = await scope.start(w);
    const own = process.getuid!();
    try {
      chownSync(key, 65534, 65534);
    } catch (err) {
      throw new Error(
        `cannot chown ${key} to uid 65534 (${(err as NodeJS.ErrnoException).code}): run the tests as root (or with CAP_CHOWN) to check secret file owners`,
        { cause: err },
      );
    }
    const r = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stdout).toMatch(
      /✗ config\/llm\.yaml:\d+:\d+ providers\.main\.api_key: secret file \.\/secrets\/key is owned by uid 65534, not by the daemon's user \(uid \d+\) \[CONFIG_SECRET_OWNER\] \(fix: chown \S+ /,
    );
    const from = d.lines.length;
    chownSync(key, own, process.getgid!());
    await d.waitFor(/msg="config reload applied" version=2 applied=a rejected_count=0/, 8000, from);
    expect(d.lines.join('\n') + r.stdout + r.stderr).not.toContain(KEY);
  });
});
