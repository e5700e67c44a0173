// The workload's feed and sink, alone and through one real (single-host) daemon.
import { afterEach, describe, expect, it } from 'vitest';
import { sleep } from '@agent/timers';
import { baseConfig, daemonScope } from '../harness.js';
import {
  createFeedServer,
  createRecordingSink,
  itemIdOf,
  pollersYaml,
  type FeedServer,
  type RecordingSink,
} from './workload.js';

let feed: FeedServer | undefined;
let sink: RecordingSink | undefined;
afterEach(async () => {
  await feed?.close();
  await sink?.close();
  feed = undefined;
  sink = undefined;
});

async function until(cond: () => boolean, ms: number): Promise<void> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > ms) throw new Error('condition not met in time');
    await sleep(20);
  }
}

describe('feed server', () => {
  it('grows each job by one numbered item per round and logs when each was published', async () => {
    let clock = 1000;
    feed = await createFeedServer({ jobs: 2, intervalMs: 60_000, now: () => clock });
    expect(feed.jobIds).toEqual(['feed-0000', 'feed-0001']);
    expect(await (await fetch(feed.url('feed-0001'))).json()).toEqual({ items: [] });
    feed.publishRound();
    clock = 3000;
    feed.publishRound();
    expect(await (await fetch(feed.url('feed-0001'))).json()).toEqual({
      items: [
        { id: 'feed-0001/000001', n: 1, published_at: new Date(1000).toISOString() },
        { id: 'feed-0001/000002', n: 2, published_at: new Date(3000).toISOString() },
      ],
    });
    expect(feed.published.map((p) => [p.itemId, p.publishedAt])).toEqual([
      ['feed-0000/000001', 1000],
      ['feed-0001/000001', 1000],
      ['feed-0000/000002', 3000],
      ['feed-0001/000002', 3000],
    ]);
    expect(feed.requestsOf('feed-0001')).toBe(2);
    expect(feed.requestsOf('feed-0000')).toBe(0);
    expect((await fetch(`${feed.baseUrl}/feed/nope`)).status).toBe(404);
  });

  it('publishes on its interval only between start and stop', async () => {
    feed = await createFeedServer({ jobs: 1, intervalMs: 40 });
    await sleep(100);
    expect(feed.published).toHaveLength(0);
    feed.startPublishing();
    await until(() => feed!.published.length >= 3, 2000);
    feed.stopPublishing();
    const n = feed.published.length;
    await sleep(120);
    expect(feed.published).toHaveLength(n);
    expect(feed.published.map((p) => p.n)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it('writes one webhook_poll job per feed', async () => {
    feed = await createFeedServer({ jobs: 1, intervalMs: 1000, prefix: 'j' });
    expect(
      pollersYaml(feed, {
        agent: 'a',
        everySecs: 2,
        maxPerTick: 5,
        deliver: { channel: 'chat_b', to: '42' },
      }),
    ).toBe(
      [
        'pollers:',
        '  default_jitter_ms: 0',
        '  jobs:',
        '    - id: j-0000',
        '      kind: webhook_poll',
        '      agent: a',
        '      schedule: { every_secs: 2 }',
        '      config:',
        `        url: ${feed.baseUrl}/feed/j-0000`,
        '        items_path: items',
        '        id_field: id',
        '        max_per_tick: 5',
        '        allow_private_networks: true',
        '        message_template: "{id}"',
        '        deliver: { channel: chat_b, to: "42" }',
        '',
      ].join('\n'),
    );
  });
});

describe('workload through a real daemon', () => {
  const scope = daemonScope();

  it('every published item reaches the recording sink, stamped when the fake accepted it', async () => {
    feed = await createFeedServer({ jobs: 2, intervalMs: 300 });
    sink = await createRecordingSink();
    const { d } = await scope.boot({
      ...baseConfig(),
      'plugins/chat_b.yaml': sink.pluginYaml(),
      'agents.d/a.yaml': sink.agentYaml(),
      'pollers.yaml': pollersYaml(feed, {
        agent: 'a',
        everySecs: 1,
        maxPerTick: 5,
        deliver: { channel: 'chat_b', to: '42' },
      }),
    });
    for (const id of feed.jobIds)
      await d.waitFor(new RegExp(`msg="poller baseline recorded".*job_id=${id}`), 10_000);
    const t0 = Date.now();
    feed.startPublishing();
    await until(() => feed!.published.length >= 4, 5000);
    feed.stopPublishing();
    const wanted = feed.published.map((p) => p.itemId);
    await until(() => wanted.every((id) => sink!.deliveries.some((s) => s.text === id)), 10_000);
    expect(wanted).toContain(itemIdOf('feed-0001', 2));
    expect(sink.deliveries.every((s) => s.chatId === '42' && s.at >= t0 && s.at <= Date.now())).toBe(true);
    expect(sink.deliveries.map((s) => s.text).sort()).toEqual([...wanted].sort());
  });
});
