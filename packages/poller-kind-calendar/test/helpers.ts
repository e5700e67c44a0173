import { startFakeTokenEndpoint, type FakeTokenEndpoint } from '@agent/oauth2/testing';
import type { ResolvedAccount, SharedContext } from '@agent/poller-core';
import type { TestJobSpec } from '@agent/poller-runtime/testing';
import { calendarPollerKind, type CalendarShared } from '../src/kind.js';
import { startFakeCalendar, type FakeCalendar } from '../src/testing.js';

export interface CalendarFixture {
  tokens: FakeTokenEndpoint;
  cal: FakeCalendar;
  account: ResolvedAccount;
  accountBlock: Record<string, unknown>;
  config(over?: Record<string, unknown>): Record<string, unknown>;
  close(): Promise<void>;
}

export async function startCalendarFixture(now: () => number = Date.now): Promise<CalendarFixture> {
  const tokens = await startFakeTokenEndpoint();
  const cal = await startFakeCalendar({ isValid: (t) => tokens.isValid(t), now });
  const accountBlock = tokens.account(cal.url);
  return {
    tokens,
    cal,
    accountBlock,
    account: { name: 'work', config: accountBlock },
    config: (over = {}) => ({
      deliver: { channel: 'chat_a', to: 'u1' },
      message_template: '{change}: {summary} — {start}',
      ...over,
    }),
    async close() {
      await cal.close();
      await tokens.close();
    },
  };
}

/** A minimal real HTTP client over the built-in fetch (structurally a `PollerHttp`). */
function fetchHttp(): SharedContext['http'] {
  return {
    async request(url, options = {}) {
      const res = await fetch(url, {
        method: options.method ?? 'GET',
        headers: { ...options.headers },
        ...(options.body !== undefined ? { body: options.body } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const body = Buffer.from(await res.arrayBuffer());
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => (headers[k] = v));
      const ra = headers['retry-after'];
      return {
        status: res.status,
        headers,
        body,
        url: res.url,
        redirects: [],
        retryAfterMs: ra && /^\d+$/.test(ra) ? Number(ra) * 1000 : undefined,
        text: () => body.toString('utf8'),
        json: <T>() => JSON.parse(body.toString('utf8')) as T,
      };
    },
  };
}

const quietLogger: SharedContext['logger'] = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return quietLogger;
  },
};

export async function sharedFor(f: CalendarFixture): Promise<CalendarShared> {
  return (await calendarPollerKind.createShared!({
    agentId: 'assistant',
    account: f.account,
    http: fetchHttp(),
    logger: quietLogger,
  })) as CalendarShared;
}

/** A `calendar` job of the test agent, every minute, delivering to `chat_a`/`u1`; `config` overrides. */
export function calendarJob(
  id: string,
  config: Record<string, unknown> = {},
  extra: Partial<TestJobSpec> = {},
): TestJobSpec {
  return {
    id,
    kind: 'calendar',
    agent: 'assistant',
    schedule: { every_secs: 60 },
    config: {
      deliver: { channel: 'chat_a', to: 'u1' },
      message_template: '{change}: {summary}',
      ...config,
    },
    ...extra,
  };
}
