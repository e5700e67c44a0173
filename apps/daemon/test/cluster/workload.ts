// The fault harness's workload: a loopback JSON feed for N `webhook_poll` jobs whose lists grow by one
// uniquely numbered item per interval (the source log), and a recording Telegram sink (the sink log).
import { createServer, type Server } from 'node:http';
import { createFakeTelegram, type FakeTelegram, type FakeTelegramSend } from '@agent/channels/testing';
import { sleep } from '@agent/timers';

/** One item the feed published: what the checker expects to reach the sink. */
export interface PublishedItem {
  jobId: string;
  itemId: string;
  /** 1, 2, 3… per job. */
  n: number;
  /** Harness wall clock, epoch ms. */
  publishedAt: number;
}

export interface FeedServer {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  readonly jobIds: readonly string[];
  /** The job's feed URL; its body is `{"items": [{"id", "n", "published_at"}, …]}`, oldest first. */
  url(jobId: string): string;
  /** Every item published so far, in publishing order. */
  readonly published: readonly PublishedItem[];
  /** Feed requests served, per job. */
  requestsOf(jobId: string): number;
  /**
   * Adds one item to every job every `intervalMs` until stopped. Start it once every job has recorded its
   * baseline (the first tick delivers nothing), so every published item is one the sink must receive.
   */
  startPublishing(): void;
  stopPublishing(): void;
  /** Adds one item to every job now (what each interval does). */
  publishRound(): void;
  close(): Promise<void>;
}

export interface FeedServerOptions {
  jobs: number;
  intervalMs: number;
  /** Job ids are `<prefix>-0000`, `<prefix>-0001`, …; default `feed`. */
  prefix?: string;
  /** Each answer waits this long (a slow source keeps ticks in flight, where faults hit them); default 0. */
  responseDelayMs?: number;
  now?: () => number;
}

/** `feed-0007/000012`: unique across jobs, sortable, and the whole text of the delivered message. */
export const itemIdOf = (jobId: string, n: number): string => `${jobId}/${String(n).padStart(6, '0')}`;

export async function createFeedServer(o: FeedServerOptions): Promise<FeedServer> {
  const now = o.now ?? Date.now;
  const jobIds = Array.from(
    { length: o.jobs },
    (_, i) => `${o.prefix ?? 'feed'}-${String(i).padStart(4, '0')}`,
  );
  const lists = new Map(jobIds.map((id) => [id, [] as PublishedItem[]]));
  const requests = new Map(jobIds.map((id) => [id, 0]));
  const published: PublishedItem[] = [];
  let stop: AbortController | undefined;

  const server: Server = createServer((req, res) => {
    const jobId = decodeURIComponent(/^\/feed\/([^/?]+)/.exec(req.url ?? '')?.[1] ?? '');
    const list = lists.get(jobId);
    if (list === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such feed"}');
      return;
    }
    requests.set(jobId, (requests.get(jobId) ?? 0) + 1);
    // The list as it was when asked: an item published while the answer waits is in the next one.
    const items = list.map((i) => ({
      id: i.itemId,
      n: i.n,
      published_at: new Date(i.publishedAt).toISOString(),
    }));
    const body = JSON.stringify({ items });
    const answer = () => void res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    if (o.responseDelayMs) void sleep(o.responseDelayMs).then(answer);
    else answer();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  const publishRound = (): void => {
    const at = now();
    for (const [jobId, list] of lists) {
      const n = list.length + 1;
      const item = { jobId, itemId: itemIdOf(jobId, n), n, publishedAt: at };
      list.push(item);
      published.push(item);
    }
  };
  const loop = async (signal: AbortSignal): Promise<void> => {
    while (await sleep(o.intervalMs, signal)) publishRound();
  };

  return {
    baseUrl,
    jobIds,
    url: (jobId) => `${baseUrl}/feed/${encodeURIComponent(jobId)}`,
    published,
    requestsOf: (jobId) => requests.get(jobId) ?? 0,
    startPublishing() {
      if (stop) return;
      stop = new AbortController();
      void loop(stop.signal);
    },
    stopPublishing() {
      stop?.abort();
      stop = undefined;
    },
    publishRound,
    async close() {
      stop?.abort();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export interface PollersYamlOptions {
  agent: string;
  everySecs: number;
  maxPerTick: number;
  /** Where items go: a chat_b instance's chat, as `{channel: chat_b, to: <chat id>}`. */
  deliver: { channel: string; to: string };
  jitterMs?: number;
  /** Lease TTL = factor x interval (at least 30 s); default the product's. */
  leaseTtlFactor?: number;
}

/** `pollers.yaml` with one `webhook_poll` job per feed; the delivered text is the item id alone. */
export function pollersYaml(feed: FeedServer, o: PollersYamlOptions): string {
  const jobs = feed.jobIds.map((id) =>
    [
      `    - id: ${id}`,
      '      kind: webhook_poll',
      `      agent: ${o.agent}`,
      `      schedule: { every_secs: ${o.everySecs} }`,
      '      config:',
      `        url: ${feed.url(id)}`,
      '        items_path: items',
      '        id_field: id',
      `        max_per_tick: ${o.maxPerTick}`,
      '        allow_private_networks: true',
      '        message_template: "{id}"',
      `        deliver: { channel: ${o.deliver.channel}, to: "${o.deliver.to}" }`,
    ].join('\n'),
  );
  const factor = o.leaseTtlFactor === undefined ? '' : `  lease_ttl_factor: ${o.leaseTtlFactor}\n`;
  return `pollers:\n  default_jitter_ms: ${o.jitterMs ?? 0}\n${factor}  jobs:\n${jobs.join('\n')}\n`;
}

/** One message the sink accepted. */
export interface SinkDelivery extends FakeTelegramSend {
  /** Harness wall clock when the fake accepted it, epoch ms. */
  at: number;
}

export interface RecordingSink {
  readonly telegram: FakeTelegram;
  readonly deliveries: readonly SinkDelivery[];
  /** `plugins/chat_b.yaml` with one instance `main` on the fake. */
  pluginYaml(): string;
  /** An `agents.d/<name>.yaml` whose agent is bound to that instance (pollers may deliver to chat_b). */
  agentYaml(providerName?: string): string;
  close(): Promise<void>;
}

/**
 * The project's Telegram fake, with the time of every accepted `sendMessage` recorded: the fake keeps no
 * times of sends, so the harness wraps its `sends.push`, which the fake calls exactly once per accepted
 * message. Its getUpdates calls (`telegram.polls`) are timed on the same clock.
 */
export async function createRecordingSink(
  o: { token?: string; now?: () => number } = {},
): Promise<RecordingSink> {
  const now = o.now ?? Date.now;
  const token = o.token ?? '4242:harness-token';
  const telegram = await createFakeTelegram({ token, now });
  const deliveries: SinkDelivery[] = [];
  const sends = telegram.sends as FakeTelegramSend[];
  const push = sends.push.bind(sends);
  sends.push = (...items: FakeTelegramSend[]): number => {
    for (const s of items) deliveries.push({ ...s, at: now() });
    return push(...items);
  };
  return {
    telegram,
    deliveries,
    pluginYaml: () => `instances:\n  main:\n    base_url: ${telegram.baseUrl}\n    bot_token: "${token}"\n`,
    agentYaml: (provider = 'main') =>
      `model:\n  provider: ${provider}\n  name: m1\nsystem_prompt: harness\ninbound_bindings:\n  - plugin: chat_b\n    instance: main\n    allowed_tools: []\n`,
    close: () => telegram.close(),
  };
}
