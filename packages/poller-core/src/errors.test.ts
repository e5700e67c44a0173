import { GuardedHttpError } from '@agent/guarded-http';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyError, PermanentError, TransientError } from './errors.js';
import { definePollerKind, withBaseConfig, type PollerKind } from './kind.js';
import { createServiceHarness, startRecordingServer, type ServiceHarness } from './testing.js';

describe('classifyError', () => {
  it('is permanent for a PermanentError and for a refused request, transient for the rest', () => {
    expect(classifyError(new PermanentError('gone'))).toBe('permanent');
    expect(classifyError(new TransientError('later'))).toBe('transient');
    for (const code of [
      'HTTP_SSRF_BLOCKED',
      'HTTP_BAD_URL',
      'HTTP_BAD_SCHEME',
      'HTTP_INVALID_REQUEST',
      'HTTP_REDIRECT_REFUSED',
    ] as const)
      expect(classifyError(new GuardedHttpError(code, 'refused')), code).toBe('permanent');
    for (const code of [
      'HTTP_NETWORK',
      'HTTP_TIMEOUT',
      'HTTP_BODY_TOO_LARGE',
      'HTTP_TOO_MANY_REDIRECTS',
      'HTTP_INVALID_JSON',
      'HTTP_ABORTED',
      'HTTP_CLOSED',
    ] as const)
      expect(classifyError(new GuardedHttpError(code, 'failed')), code).toBe('transient');
    expect(classifyError(new Error('boom'))).toBe('transient');
    expect(classifyError(undefined)).toBe('transient');
  });

  it('goes by code: an HTTP error of another package copy counts, a message alone does not', () => {
    expect(classifyError({ code: 'HTTP_SSRF_BLOCKED', message: 'x' })).toBe('permanent');
    expect(classifyError(new Error('HTTP_SSRF_BLOCKED: refused'))).toBe('transient');
  });
});

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
