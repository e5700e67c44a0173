// The webhook_poll kind inside the real poller service: baseline, dedup, carry-over, secrets, errors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStateStore } from '@agent/poller-runtime/sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, job, memoryLogger, startServer, type TestServer } from '../test/helpers.js';
import { webhookPollerKind } from './index.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

/** A JSON endpoint whose answer the test changes between ticks. */
async function endpoint(initial: unknown) {
  const state = { status: 200, body: initial as unknown };
  const server: TestServer = await startServer((_req, res) => {
    res.writeHead(state.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(state.body));
  });
  cleanup.push(() => server.close());
  return { server, state };
}

const deep = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;
const list = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, title: `t${i}` }));

function hookJob(url: string, extra: Record<string, unknown> = {}) {
  return job('hook', 'webhook_poll', {
    url,
    items_path: 'data',
    id_field: 'id',
    message_template: '{title} ({id})',
    allow_private_networks: true,
    ...extra,
  });
}

async function started(opts: Parameters<typeof harness>[0]) {
  const h = harness(opts);
  cleanup.push(() => h.service.stop());
  await h.service.start();
  return h;
}

describe('webhook_poll through the poller service', () => {
  it('baselines first, then delivers new ids once; 1 and "1" are the same id', async () => {
    const e = await endpoint({ data: [{ id: 1, title: 'one' }] });
    const h = await started({ kind: webhookPollerKind, jobs: [hookJob(`${e.server.url}/events`)] });
    expect(await h.service.run('hook')).toMatchObject({ status: 'ok', items_dispatched: 0 });

    e.state.body = {
      data: [
        { id: '1', title: 'one again, as a string' },
        { id: 2, title: 'two' },
        { id: '2', title: 'two repeated' },
        { id: 3, title: 'three' },
      ],
    };
    await h.service.run('hook');
    await h.service.run('hook');
    expect(h.dispatcher.texts()).toEqual(['two (2)', 'three (3)']);
  });

  it('max_per_tick carries the rest over to the next ticks', async () => {
    const e = await endpoint({ data: [] });
    const h = await started({
      kind: webhookPollerKind,
      jobs: [hookJob(`${e.server.url}/events`, { max_per_tick: 2 })],
    });
    await h.service.run('hook');
    e.state.body = { data: [1, 2, 3, 4, 5].map((id) => ({ id, title: `t${id}` })) };
    await h.service.run('hook');
    expect(h.dispatcher.texts()).toEqual(['t1 (1)', 't2 (2)']);
    await h.service.run('hook');
    await h.service.run('hook');
    expect(h.dispatcher.texts()).toEqual(['t1 (1)', 't2 (2)', 't3 (3)', 't4 (4)', 't5 (5)']);
  });

  it('reset re-baselines; a new service on the same sqlite file delivers nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-state-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'poller.db');
    const e = await endpoint({ data: [{ id: 1, title: 'a' }] });

    const store1 = createSqliteStateStore(file);
    const h1 = harness({ kind: webhookPollerKind, jobs: [hookJob(`${e.server.url}/x`)], store: store1 });
    await h1.service.start();
    await h1.service.run('hook');
    e.state.body = {
      data: [
        { id: 1, title: 'a' },
        { id: 2, title: 'b' },
      ],
    };
    await h1.service.run('hook');
    expect(h1.dispatcher.texts()).toEqual(['b (2)']);
    await h1.service.reset('hook');
    e.state.body = { data: [1, 2, 3].map((id) => ({ id, title: `t${id}` })) };
    expect(await h1.service.run('hook')).toMatchObject({ status: 'ok', items_dispatched: 0 });
    await h1.service.stop();
    await store1.close();

    const store2 = createSqliteStateStore(file);
    cleanup.push(() => store2.close());
    const h2 = await started({
      kind: webhookPollerKind,
      jobs: [hookJob(`${e.server.url}/x`)],
      store: store2,
    });
    expect(await h2.service.run('hook')).toMatchObject({ status: 'ok', items_dispatched: 0 });
    e.state.body = { data: [1, 2, 3, 4].map((id) => ({ id: String(id), title: `t${id}` })) };
    await h2.service.run('hook');
    expect(h2.dispatcher.texts()).toEqual(['t4 (4)']);
  });

  it('an item without an id is skipped with a warning in the job log; the others are delivered', async () => {
    const e = await endpoint({ data: [] });
    const logger = memoryLogger();
    const h = await started({ kind: webhookPollerKind, jobs: [hookJob(`${e.server.url}/x`)], logger });
    await h.service.run('hook');
    e.state.body = { data: [{ title: 'anonymous' }, { id: 'k', title: 'kept' }] };
    await h.service.run('hook');
    expect(h.dispatcher.texts()).toEqual(['kept (k)']);
    const warn = logger.find('webhook_poll items without a usable id were skipped');
    expect(warn).toHaveLength(1);
    expect(warn[0]!.fields).toMatchObject({ job_id: 'hook', kind: 'webhook_poll', skipped: 1 });
  });

  it('header secrets never reach show, the alert, the last error or the log', async () => {
    const token = 'tok-9f8e7d6c5b4a';
    // An endpoint that echoes the request headers in its error body.
    const server = await startServer((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify({ error: 'bad token', got: req.headers.authorization }));
    });
    cleanup.push(() => server.close());
    const logger = memoryLogger();
    const h = await started({
      kind: webhookPollerKind,
      jobs: [hookJob(`${server.url}/x`, { headers: { Authorization: `Bearer ${token}` } })],
      logger,
      // What the config loader records for a `${ENV}` reference.
      secrets: [token],
    });
    expect(await h.service.run('hook')).toMatchObject({ status: 'permanent' });
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${token}`);
    const detail = await h.service.show('hook');
    expect(detail.paused).toBe(true);
    expect(detail.last_error).toContain('answered 401');
    const alert = h.dispatcher.deliveries.find((d) => d.channel === 'chat_b');
    expect(alert?.text).toContain('kind webhook_poll');
    const everything = JSON.stringify([detail, alert, await h.service.list(), logger.records]);
    expect(everything).not.toContain(token);
  });

  it('error texts never carry header values or the response body, even for values not known as secrets', async () => {
    const literal = 'literal-key-4711';
    const server = await startServer((req, res) => {
      res.writeHead(req.path === '/a' ? 403 : 200, { 'content-type': 'text/html' });
      res.end(`<p>denied for ${String(req.headers['x-api-key'])}</p>`);
    });
    cleanup.push(() => server.close());
    const logger = memoryLogger();
    const h = await started({
      kind: webhookPollerKind,
      jobs: [
        hookJob(`${server.url}/a`, { headers: { 'X-Api-Key': literal } }),
        { ...hookJob(`${server.url}/b`, { headers: { 'X-Api-Key': literal } }), id: 'hook_b' },
      ],
      logger,
    });
    expect(await h.service.run('hook')).toMatchObject({ status: 'permanent' });
    expect(await h.service.run('hook_b')).toMatchObject({ status: 'transient' });
    const errors = [(await h.service.show('hook')).last_error, (await h.service.show('hook_b')).last_error];
    expect(errors[1]).toContain('not JSON');
    const everything = JSON.stringify([errors, h.dispatcher.deliveries, logger.records]);
    expect(everything).not.toContain(literal);
  });

  it('429 is Transient and keeps the job running; 404 pauses it', async () => {
    const e = await endpoint({ data: [] });
    const h = await started({ kind: webhookPollerKind, jobs: [hookJob(`${e.server.url}/x`)] });
    e.state.status = 429;
    expect(await h.service.run('hook')).toMatchObject({ status: 'transient' });
    expect((await h.service.show('hook')).paused).toBe(false);
    e.state.status = 404;
    expect(await h.service.run('hook')).toMatchObject({ status: 'permanent' });
    expect((await h.service.show('hook')).paused).toBe(true);
  });

  it('rejects at validation a literal private host without the option, and a body on GET', async () => {
    const h = await started({
      kind: webhookPollerKind,
      jobs: [
        { ...hookJob('http://10.1.2.3/x', { allow_private_networks: false }), id: 'private' },
        { ...hookJob('https://api.example.org/x', { body: { q: 1 } }), id: 'get_body' },
        { ...hookJob('https://api.example.org/x'), id: 'fine' },
      ],
    });
    const rejected = h.service.rejected();
    expect(rejected.map((r) => r.id).sort()).toEqual(['get_body', 'private']);
    const text = rejected.flatMap((r) => r.issues.map((i) => i.message)).join('\n');
    expect(text).toContain('url host 10.1.2.3 is a private or loopback address');
    expect(text).toContain('body is only sent with method: POST');
    expect((await h.service.list()).map((j) => j.id)).toEqual(['fine']);
  });

  it('a response nested deeper than 64 levels fails Transient naming the depth, not with a stack overflow', async () => {
    let id = 1;
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"data":[{"id":${id},"title":"t","v":${deep(100_000)}}]}`);
    });
    cleanup.push(() => server.close());
    const h = await started({
      kind: webhookPollerKind,
      jobs: [hookJob(`${server.url}/deep`, { message_template: '{title} {v}' })],
    });
    const reports = [];
    for (; id <= 2; id++) reports.push(await h.service.run('hook'));
    for (const r of reports) {
      expect(r.status).toBe('transient');
      expect(r.error).toContain('deeper than 64 levels');
      expect(r.error).toContain('HTTP_JSON_TOO_DEEP');
      expect(r.error).not.toMatch(/call stack/i);
    }
  });

  it('considers only the newest max_items_considered items of a large response, with one warning', async () => {
    const e = await endpoint({ data: list(30) });
    const logger = memoryLogger();
    const h = await started({
      kind: webhookPollerKind,
      jobs: [hookJob(`${e.server.url}/x`, { max_items_considered: 10 })],
      logger,
    });
    expect(await h.service.run('hook')).toMatchObject({ status: 'ok', items_seen: 10 });
    e.state.body = { data: list(32) };
    expect(await h.service.run('hook')).toMatchObject({ status: 'ok', items_dispatched: 2 });
    expect(h.dispatcher.texts()).toEqual(['t30 (30)', 't31 (31)']);
    const warn = logger.find('webhook_poll considered only the newest items of a large response');
    expect(warn).toHaveLength(1);
    expect(warn[0]!.fields).toMatchObject({ considered: 10, dropped: 20 });
  });
});
