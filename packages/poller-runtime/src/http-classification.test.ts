// A kind that lets the guarded client's errors through: the runtime classifies them by code.
import { definePollerKind, withBaseConfig, type PollerKind } from '@agent/poller-core';
import { startRecordingServer } from '@agent/poller-core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createServiceHarness, type ServiceHarness } from './testing.js';

describe('a kind that lets ctx.http throw', () => {
  // The tick does not catch: whatever the guarded client throws reaches the runner as it is.
  const letsThrough: PollerKind = definePollerKind<{ url: string }>({
    kind: 'lets_through',
    apiVersion: 1,
    configSchema: withBaseConfig({
      additionalProperties: false,
      required: ['url'],
      properties: { url: { type: 'string' }, allow_private_networks: { type: 'boolean' } },
    }),
    placeholders: [],
    async tick(ctx) {
      await ctx.http.request(ctx.config.url);
      return { items: [] };
    },
  });

  let h: ServiceHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const harness = (config: Record<string, unknown>): ServiceHarness =>
    createServiceHarness(letsThrough, {
      agents: { a: { channels: ['log'] } },
      settings: { breaker_threshold: 3 },
      jobs: [
        {
          id: 'j',
          kind: 'lets_through',
          agent: 'a',
          schedule: { every_secs: 60 },
          config: { deliver: { channel: 'log', to: 'me' }, message_template: 'x', ...config },
        },
      ],
    });

  it('gets a refused URL paused at the first tick, not retried into an open breaker', async () => {
    const srv = await startRecordingServer((_req, res) => res.end('ok'));
    try {
      // Loopback without allow_private_networks: the SSRF guard refuses it before anything is sent.
      h = harness({ url: `${srv.url}/feed` });
      await h.service.start();
      for (let i = 0; i < 5; i++) await h.advance(61_000);
      const job = await h.service.show('j');
      expect(job.last_status).toBe('permanent');
      expect(job.paused).toBe(true);
      expect(job.consecutive_errors).toBe(0);
      expect(job.breaker_state).toBe(0);
      expect(job.last_error).toContain('Refused to connect');
      expect(srv.requests).toHaveLength(0);
    } finally {
      await srv.close();
    }
  });

  it('retries a network failure as Transient', async () => {
    const srv = await startRecordingServer(() => {});
    const dead = srv.url;
    await srv.close();
    h = harness({ url: `${dead}/feed`, allow_private_networks: true });
    await h.service.start();
    expect((await h.service.run('j')).status).toBe('transient');
    const job = await h.service.show('j');
    expect(job.paused).toBe(false);
    expect(job.consecutive_errors).toBe(1);
  });
});
