import { createMemoryLogger, type MemoryLogger } from '@agent/log';
import { afterEach, describe, expect, it } from 'vitest';
import { ANTHROPIC_KEY, OPENAI_KEY, providerFor, recordingSleep } from '../test/helpers.js';
import {
  createModelClient,
  isModelError,
  ModelError,
  type ChatRequest,
  type ModelClient,
  type ModelClientOptions,
  type ModelProviderConfig,
} from './index.js';
import {
  anthropicError,
  anthropicText,
  createFakeAnthropic,
  createFakeOpenAI,
  openaiError,
  openaiText,
  type FakeModelServer,
} from './testing/index.js';

const REQ: ChatRequest = {
  model: 'test-model',
  system: 'sys',
  messages: [{ role: 'user', content: 'hello' }],
  tools: [],
};

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).toReversed()) await c();
});

async function setup(
  type: ModelProviderConfig['type'] = 'openai',
  overrides: Partial<ModelProviderConfig> = {},
  options: Partial<ModelClientOptions> = {},
): Promise<{ fake: FakeModelServer; client: ModelClient; logger: MemoryLogger; delays: number[] }> {
  const fake =
    type === 'openai'
      ? await createFakeOpenAI({ apiKey: OPENAI_KEY })
      : await createFakeAnthropic({ apiKey: ANTHROPIC_KEY });
  const logger = createMemoryLogger();
  const { delays, sleep } = recordingSleep();
  const client = createModelClient(providerFor(fake, type, overrides), {
    logger,
    sleep,
    random: () => 0,
    ...options,
  });
  cleanups.push(async () => {
    await client.retire();
    await fake.close();
  });
  return { fake, client, logger, delays };
}

async function failure(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ModelError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('retries', () => {
  it('429 with retry-after, then success: waits what the provider asked', async () => {
    const { fake, client, delays, logger } = await setup();
    fake.reply(openaiError(429, 'Rate limit reached', { headers: { 'retry-after': '2' } }), openaiText('ok'));
    await expect(client.complete(REQ)).resolves.toMatchObject({ text: 'ok' });
    expect(delays).toEqual([2000]);
    expect(fake.requests).toHaveLength(2);
    expect(logger.find('model call retry')[0]?.fields).toMatchObject({
      provider: 'main',
      status: 429,
      code: 'MODEL_RATE_LIMITED',
      delay_ms: 2000,
    });
  });

  it('honours a retry-after HTTP date against the injected clock', async () => {
    const now = Date.parse('2026-03-01T12:00:00Z');
    const { fake, client, delays } = await setup('openai', {}, { now: () => now });
    fake.reply(
      openaiError(429, 'slow down', { headers: { 'retry-after': 'Sun, 01 Mar 2026 12:00:04 GMT' } }),
      openaiText('ok'),
    );
    await client.complete(REQ);
    expect(delays).toEqual([4000]);
  });

  it("honours Anthropic's retry-after on 529 overloaded", async () => {
    const { fake, client, delays } = await setup('anthropic');
    fake.reply(
      anthropicError(529, 'overloaded_error', 'Overloaded', { 'retry-after': '1' }),
      anthropicText('ok'),
    );
    await expect(client.complete(REQ)).resolves.toMatchObject({ text: 'ok' });
    expect(delays).toEqual([1000]);
  });

  it('500 twice, then success: exponential backoff with jitter', async () => {
    const { fake, client, delays } = await setup('openai', {}, { random: () => 0.5 });
    fake.reply(openaiError(500, 'boom'), openaiError(502, 'bad gateway'), openaiText('third time'));
    await expect(client.complete(REQ)).resolves.toMatchObject({ text: 'third time' });
    expect(fake.requests).toHaveLength(3);
    expect(delays).toEqual([375, 750]);
  });

  it('retries exhausted: the code of the last failure, with attempts and status', async () => {
    const { fake, client, delays } = await setup('openai', { max_retries: 2 });
    fake.reply(openaiError(503, 'a'), openaiError(503, 'b'), openaiError(503, 'down for maintenance'));
    const err = await failure(client.complete(REQ));
    expect(err).toMatchObject({ code: 'MODEL_UNAVAILABLE', status: 503, attempts: 3, provider: 'main' });
    expect(err.message).toContain('down for maintenance');
    expect(err.message).toContain('after 3 attempts');
    expect(delays).toHaveLength(2);

    fake.reply(openaiError(429, 'x'), openaiError(429, 'x'), openaiError(429, 'quota'));
    await expect(client.complete(REQ)).rejects.toMatchObject({ code: 'MODEL_RATE_LIMITED', attempts: 3 });
    expect(fake.requests).toHaveLength(6);
  });

  it('a retry-after longer than maxRetryAfterMs fails at once', async () => {
    const { fake, client, delays } = await setup('openai', {}, { maxRetryAfterMs: 10_000 });
    fake.reply(openaiError(429, 'come back later', { headers: { 'retry-after': '120' } }));
    const err = await failure(client.complete(REQ));
    expect(err).toMatchObject({ code: 'MODEL_RATE_LIMITED', retryAfterMs: 120_000, attempts: 1 });
    expect(err.message).toContain('asked to wait 120 s');
    expect(delays).toEqual([]);
    expect(fake.requests).toHaveLength(1);
  });

  it('400 is not retried; 401 and 403 are MODEL_AUTH', async () => {
    const { fake, client, delays } = await setup();
    fake.reply(openaiError(400, "Invalid value for 'model'"));
    const bad = await failure(client.complete(REQ));
    expect(bad).toMatchObject({ code: 'MODEL_BAD_REQUEST', status: 400, attempts: 1 });
    expect(bad.message).toContain("Invalid value for 'model'");
    expect(fake.requests).toHaveLength(1);

    fake.reply(openaiError(403, 'Project does not have access'));
    await expect(client.complete(REQ)).rejects.toMatchObject({ code: 'MODEL_AUTH', status: 403 });
    expect(fake.requests).toHaveLength(2);
    expect(delays).toEqual([]);
  });

  it('a wrong key is MODEL_AUTH (the fake refuses it like the API)', async () => {
    const { fake, client } = await setup('anthropic', { api_key: 'sk-ant-wrong-key-000000' });
    const err = await failure(client.complete(REQ));
    expect(err).toMatchObject({ code: 'MODEL_AUTH', status: 401 });
    expect(err.message).toContain('invalid x-api-key');
    expect(fake.requests).toHaveLength(1);
  });

  it('a dropped connection is retried', async () => {
    const { fake, client, delays } = await setup();
    fake.reply({ drop: true }, openaiText('after the drop'));
    await expect(client.complete(REQ)).resolves.toMatchObject({ text: 'after the drop' });
    expect(delays).toHaveLength(1);
  });

  it('an unreachable base_url is MODEL_UNAVAILABLE after the retries', async () => {
    const gone = await createFakeOpenAI();
    const baseUrl = gone.baseUrl;
    await gone.close();
    const { delays, sleep } = recordingSleep();
    const client = createModelClient(
      {
        name: 'main',
        type: 'openai',
        base_url: baseUrl,
        api_key: OPENAI_KEY,
        timeout_ms: 2000,
        max_retries: 1,
      },
      { logger: createMemoryLogger(), sleep },
    );
    cleanups.push(() => client.retire());
    const err = await failure(client.complete(REQ));
    expect(err).toMatchObject({ code: 'MODEL_UNAVAILABLE', attempts: 2 });
    expect(err.message).toContain('ECONNREFUSED');
    expect(delays).toHaveLength(1);
  });
});

describe('timeouts and cancellation', () => {
  it('an attempt over timeout_ms is MODEL_TIMEOUT', async () => {
    const { fake, client } = await setup('openai', { timeout_ms: 100, max_retries: 0 });
    fake.reply({ hang: true });
    const err = await failure(client.complete(REQ));
    expect(err).toMatchObject({ code: 'MODEL_TIMEOUT', attempts: 1 });
    expect(err.message).toContain('timeout_ms=100');
  });

  it('a timed-out attempt is retried', async () => {
    const { fake, client, delays } = await setup('anthropic', { timeout_ms: 100, max_retries: 1 });
    fake.reply({ hang: true }, anthropicText('second try'));
    await expect(client.complete(REQ)).resolves.toMatchObject({ text: 'second try' });
    expect(delays).toHaveLength(1);
  });

  it("the caller's signal aborts a running request", async () => {
    const { fake, client } = await setup();
    fake.reply({ hang: true });
    const ctl = new AbortController();
    const pending = failure(client.complete(REQ, { signal: ctl.signal }));
    await fake.waitForRequests(1);
    expect(client.inFlight).toBe(1);
    ctl.abort();
    expect(await pending).toMatchObject({ code: 'MODEL_ABORTED' });
    expect(client.inFlight).toBe(0);
  });

  it("the caller's signal cancels the wait between retries", async () => {
    const { fake, client } = await setup('openai', {}, { sleep: undefined, maxRetryAfterMs: 60_000 });
    fake.reply(openaiError(429, 'wait', { headers: { 'retry-after': '30' } }));
    const ctl = new AbortController();
    const started = Date.now();
    const pending = failure(client.complete(REQ, { signal: ctl.signal }));
    await fake.waitForRequests(1);
    setTimeout(() => ctl.abort(), 20);
    expect(await pending).toMatchObject({ code: 'MODEL_ABORTED' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(fake.requests).toHaveLength(1);
  });

  it('an already aborted signal sends nothing', async () => {
    const { fake, client } = await setup();
    await expect(client.complete(REQ, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'MODEL_ABORTED',
    });
    expect(fake.requests).toHaveLength(0);
  });
});

describe('retire', () => {
  it('a call in flight completes on the retired client; new calls are refused; the pool closes after', async () => {
    const { fake, client, logger } = await setup();
    const gate = deferred();
    fake.setHandler(async () => {
      await gate.promise;
      return openaiText('finished on the old client');
    });
    const slow = client.complete(REQ);
    await fake.waitForRequests(1);
    expect(fake.openConnections).toBe(1);

    let closed = false;
    const retired = client.retire().then(() => {
      closed = true;
    });
    expect(client.retire()).toBe(client.retire());
    expect(client.state).toBe('retired');
    await expect(client.complete(REQ)).rejects.toMatchObject({ code: 'MODEL_CLIENT_RETIRED' });
    expect(fake.requests).toHaveLength(1);
    expect(client.inFlight).toBe(1);
    expect(closed).toBe(false);

    gate.resolve();
    await expect(slow).resolves.toMatchObject({ text: 'finished on the old client' });
    await retired;
    expect(client.state).toBe('closed');
    expect(client.inFlight).toBe(0);
    await fake.waitForNoConnections();
    expect(fake.openConnections).toBe(0);
    expect(logger.find('model client closed')[0]).toMatchObject({
      level: 'info',
      fields: { reason: 'drained', aborted_calls: 0 },
    });
  });

  it('the retire deadline aborts a stuck call and closes the pool', async () => {
    const { fake, client, logger } = await setup(
      'anthropic',
      { timeout_ms: 60_000 },
      { retireDeadlineMs: 50 },
    );
    fake.reply({ hang: true });
    const stuck = failure(client.complete(REQ));
    await fake.waitForRequests(1);
    await client.retire();
    expect(client.state).toBe('closed');
    const err = await stuck;
    expect(err.code).toBe('MODEL_CLIENT_RETIRED');
    expect(err.message).toContain('50 ms');
    await fake.waitForNoConnections();
    expect(logger.find('model client closed')[0]?.fields).toMatchObject({
      reason: 'deadline',
      aborted_calls: 1,
    });
  });

  it('retiring an idle client closes it at once, and says so at debug only (every reload does it)', async () => {
    const { client, logger } = await setup();
    await client.retire();
    expect(client.state).toBe('closed');
    await expect(client.complete(REQ)).rejects.toMatchObject({ code: 'MODEL_CLIENT_RETIRED' });
    expect(logger.find('model client retired').map((r) => r.level)).toEqual(['debug']);
    expect(logger.find('model client closed').map((r) => r.level)).toEqual(['debug']);
  });

  it('two clients of one provider are independent: retiring one leaves the other working', async () => {
    const { fake, client: oldClient } = await setup();
    const newClient = createModelClient(providerFor(fake, 'openai'), { logger: createMemoryLogger() });
    cleanups.push(() => newClient.retire());
    await oldClient.retire();
    fake.reply(openaiText('new snapshot'));
    await expect(newClient.complete(REQ)).resolves.toMatchObject({ text: 'new snapshot' });
  });
});

describe('secrets', () => {
  it('the api key never appears in error messages or logs', async () => {
    const openai = await setup('openai');
    const anthropic = await setup('anthropic');
    // A hostile or careless server echoing the key verbatim, in every error path.
    openai.fake.setHandler((req) => openaiError(400, `bad request from ${req.headers.authorization}`));
    anthropic.fake.setHandler((req) => ({
      status: 500,
      body: `upstream said: key=${req.headers['x-api-key']}`,
    }));

    const errors = [
      await failure(openai.client.complete(REQ)),
      await failure(anthropic.client.complete(REQ)),
    ];
    const wrongKey = createModelClient(
      providerFor(openai.fake, 'openai', { api_key: 'sk-live-0123456789abcdef' }),
      {
        logger: openai.logger,
      },
    );
    cleanups.push(() => wrongKey.retire());
    openai.fake.setHandler(undefined);
    errors.push(await failure(wrongKey.complete(REQ)));
    expect(errors.map((e) => e.code)).toEqual(['MODEL_BAD_REQUEST', 'MODEL_UNAVAILABLE', 'MODEL_AUTH']);

    const text = [
      ...errors.flatMap((e) => [e.message, String(e), JSON.stringify(e), e.stack ?? '']),
      ...openai.logger.lines,
      ...anthropic.logger.lines,
    ].join('\n');
    for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, 'sk-live-0123456789abcdef', 'cdef']) {
      expect(text).not.toContain(secret);
    }
    expect(errors[0]?.message).toContain('[redacted]');
  });

  it('a config error names the field, never the value', () => {
    const base = {
      name: 'main',
      type: 'openai' as const,
      base_url: 'https://api.example.test/v1',
      api_key: 'sk-secret-value-1234',
      timeout_ms: 1000,
      max_retries: 2,
    };
    const cases: [Partial<ModelProviderConfig>, string][] = [
      [{ type: 'gemini' as never }, 'providers.main.type'],
      [{ base_url: 'ftp://x' }, 'providers.main.base_url'],
      [{ api_key: '  ' }, 'providers.main.api_key'],
      [{ timeout_ms: 0 }, 'providers.main.timeout_ms'],
      [{ max_retries: -1 }, 'providers.main.max_retries'],
    ];
    for (const [patch, field] of cases) {
      let caught: unknown;
      try {
        createModelClient({ ...base, ...patch }, { logger: createMemoryLogger() });
      } catch (err) {
        caught = err;
      }
      expect(isModelError(caught)).toBe(true);
      expect(caught).toMatchObject({ code: 'MODEL_CONFIG_INVALID' });
      expect((caught as Error).message).toContain(field);
      expect((caught as Error).message).not.toContain('sk-secret-value-1234');
    }
  });
});

describe('requests', () => {
  it('an invalid request is refused before anything is sent', async () => {
    const { fake, client } = await setup();
    await expect(client.complete({ ...REQ, model: '' })).rejects.toMatchObject({ code: 'MODEL_BAD_REQUEST' });
    await expect(client.complete({ ...REQ, maxTokens: 0 })).rejects.toMatchObject({
      code: 'MODEL_BAD_REQUEST',
    });
    expect(fake.requests).toHaveLength(0);
    expect(client.inFlight).toBe(0);
  });

  it('counts concurrent calls in inFlight', async () => {
    const { fake, client } = await setup();
    const gate = deferred();
    fake.setHandler(async () => {
      await gate.promise;
      return openaiText('x');
    });
    const calls = [client.complete(REQ), client.complete(REQ), client.complete(REQ)];
    await fake.waitForRequests(3);
    expect(client.inFlight).toBe(3);
    gate.resolve();
    await Promise.all(calls);
    expect(client.inFlight).toBe(0);
  });

  it('a response over maxResponseBytes is MODEL_BAD_RESPONSE', async () => {
    const { fake, client } = await setup('openai', {}, { maxResponseBytes: 1000 });
    fake.reply(openaiText('x'.repeat(5000)));
    await expect(client.complete(REQ)).rejects.toMatchObject({ code: 'MODEL_BAD_RESPONSE' });
  });
});
