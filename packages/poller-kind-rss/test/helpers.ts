/** Test helpers: a loopback feed server, a recording logger and the real poller service around a kind. */
import type { PollerKind } from '@agent/poller-core';
import type { StateStore } from '@agent/poller-runtime';
import {
  createMemoryLogger,
  createServiceHarness,
  type MemoryLogger as CoreMemoryLogger,
  type TestJobSpec,
} from '@agent/poller-runtime/testing';

export {
  startRecordingServer as startServer,
  type RecordingServer as TestServer,
} from '@agent/poller-core/testing';

export type MemoryLogger = CoreMemoryLogger & { text(): string };

/** The recording logger of poller-core's test helpers, plus `text()`: every record as JSON, for leak checks. */
export function memoryLogger(): MemoryLogger {
  const l = createMemoryLogger();
  return Object.assign(l, { text: () => JSON.stringify(l.records) });
}

export { withTickLogger as withLogger } from '@agent/poller-core/testing';

export interface HarnessOptions {
  kind: PollerKind;
  jobs: TestJobSpec[];
  store?: StateStore;
  logger?: MemoryLogger;
  secrets?: string[];
}

/** The real poller service with a memory (or given) store, a fake clock and the test dispatcher. */
export function harness(opts: HarnessOptions) {
  return createServiceHarness(opts.kind, {
    jobs: opts.jobs,
    ...(opts.store ? { store: opts.store } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.secrets ? { secrets: opts.secrets } : {}),
  });
}

export function job(id: string, kind: string, config: Record<string, unknown>): TestJobSpec {
  return {
    id,
    kind,
    agent: 'assistant',
    schedule: { every_secs: 60 },
    failure_to: { channel: 'chat_b', to: 'ops' },
    config: { deliver: { channel: 'chat_a', to: 'u1' }, ...config },
  };
}

export interface FeedEntry {
  guid: string;
  title: string;
  /** ISO date; rendered as RFC 822. */
  date?: string;
  link?: string;
}

/** An RSS 2.0 document, newest entry first as feeds usually are (the given order is kept). */
export function rss(list: FeedEntry[], title = 'Test feed'): string {
  const items = list
    .map(
      (e) =>
        `<item><guid isPermaLink="false">${e.guid}</guid><title>${e.title}</title>` +
        (e.link ? `<link>${e.link}</link>` : '') +
        (e.date ? `<pubDate>${new Date(e.date).toUTCString()}</pubDate>` : '') +
        `</item>`,
    )
    .join('');
  return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>${title}</title><link>https://example.org/</link>${items}</channel></rss>`;
}

/** Entries `n` (ids `g<n>`), dated one hour apart, newest first. */
export function entries(...ns: number[]): FeedEntry[] {
  return ns
    .map((n) => ({
      guid: `g${n}`,
      title: `Post ${n}`,
      date: new Date(Date.UTC(2026, 0, 1, n)).toISOString(),
      link: `https://example.org/p/${n}`,
    }))
    .toReversed();
}
