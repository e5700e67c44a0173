import { createMemoryLogger } from '@agent/log';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OPENAI_KEY, providerFor, sentBody, weatherTool } from '../test/helpers.js';
import { createModelClient, type ChatMessage, type ModelClient } from './index.js';
import { createFakeOpenAI, openaiCompletion, openaiText, type FakeModelServer } from './testing/index.js';

let fake: FakeModelServer;
let client: ModelClient;

beforeEach(async () => {
  fake = await createFakeOpenAI({ apiKey: OPENAI_KEY });
  client = createModelClient(providerFor(fake, 'openai'), { logger: createMemoryLogger() });
});

afterEach(async () => {
  await client.retire();
  await fake.close();
});

describe('OpenAI-compatible chat completions', () => {
  it('round trip: a tool call, then the final text after the tool result', async () => {
    fake.reply(
      openaiCompletion({
        text: null,
        toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Lisbon' } }],
        usage: { prompt_tokens: 42, completion_tokens: 7 },
      }),
      openaiText('It is sunny in Lisbon.'),
    );
    const messages: ChatMessage[] = [{ role: 'user', content: 'Weather in Lisbon?' }];
    const first = await client.complete({
      model: 'gpt-4o-mini',
      system: 'You are terse.',
      messages,
      tools: [weatherTool],
      maxTokens: 200,
    });
    expect(first).toEqual({
      text: '',
      toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Lisbon' } }],
      stopReason: 'tool_use',
      usage: { inputTokens: 42, outputTokens: 7 },
    });

    messages.push(
      { role: 'assistant', content: '', toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: 'call_abc', content: '{"sky":"clear","c":24}' },
    );
    const second = await client.complete({
      model: 'gpt-4o-mini',
      system: 'You are terse.',
      messages,
      tools: [weatherTool],
    });
    expect(second.text).toBe('It is sunny in Lisbon.');
    expect(second.toolCalls).toEqual([]);
    expect(second.stopReason).toBe('end');

    expect(fake.requests).toHaveLength(2);
    const [r1, r2] = fake.requests;
    expect(r1?.method).toBe('POST');
    expect(r1?.path).toBe('/v1/chat/completions');
    expect(r1?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(r1?.headers['content-type']).toBe('application/json');
    expect(r1?.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Lisbon?' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather for a city.',
            parameters: weatherTool.parameters,
          },
        },
      ],
      max_tokens: 200,
    });
    expect(sentBody(fake, 1).messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_abc',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: '{"sky":"clear","c":24}' },
    ]);
    expect(r2?.body).not.toHaveProperty('max_tokens');
  });

  it('turns arguments that are not JSON into an argumentsError the runtime can return', async () => {
    fake.reply(
      openaiCompletion({
        toolCalls: [{ id: 'call_bad', name: 'get_weather', arguments: '{"city": "Lis' }],
      }),
      openaiText('Sorry.'),
    );
    const res = await client.complete({
      model: 'm',
      system: '',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
    });
    const call = res.toolCalls[0];
    expect(call?.arguments).toBe('{"city": "Lis');
    expect(call?.argumentsError).toMatch(/^The arguments for tool "get_weather" were not valid JSON/);

    // Sent back as an error result, the transcript is still one the API accepts.
    await client.complete({
      model: 'm',
      system: '',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', toolCalls: res.toolCalls },
        { role: 'tool', toolCallId: 'call_bad', content: call?.argumentsError ?? '', isError: true },
      ],
      tools: [weatherTool],
    });
    const sent = sentBody(fake, 1).messages;
    expect(sent[0]).toEqual({ role: 'user', content: 'hi' });
    expect(sent[1].tool_calls[0].function.arguments).toBe('{"city": "Lis');
    expect(sent[2].content).toMatch(/^Error: The arguments for tool/);
  });

  it('maps finish reasons and a trailing slash in base_url', async () => {
    const slashed = createModelClient(providerFor(fake, 'openai', { base_url: `${fake.baseUrl}/` }), {
      logger: createMemoryLogger(),
      openaiMaxTokensField: 'max_completion_tokens',
    });
    fake.reply(
      openaiCompletion({ text: 'cut', finishReason: 'length' }),
      openaiCompletion({ text: 'x', finishReason: 'content_filter' }),
      // Some compatible servers say "stop" although they call tools.
      openaiCompletion({ toolCalls: [{ name: 'get_weather', arguments: '' }], finishReason: 'stop' }),
    );
    const req = {
      model: 'm',
      system: '',
      messages: [{ role: 'user' as const, content: 'q' }],
      tools: [],
      maxTokens: 5,
    };
    expect((await slashed.complete(req)).stopReason).toBe('max_tokens');
    expect((await slashed.complete(req)).stopReason).toBe('other');
    const third = await slashed.complete(req);
    expect(third.stopReason).toBe('tool_use');
    expect(third.toolCalls[0]?.arguments).toEqual({});
    expect(fake.requests.map((r) => r.path)).toEqual(Array(3).fill('/v1/chat/completions'));
    expect(fake.requests[0]?.body).toMatchObject({ max_completion_tokens: 5 });
    expect(fake.requests[0]?.body).not.toHaveProperty('max_tokens');
    await slashed.retire();
  });

  it('reports a body that is not a chat completion as MODEL_BAD_RESPONSE', async () => {
    fake.reply({ status: 200, body: { object: 'list', data: [] } }, { status: 200, body: '<html>' });
    const req = { model: 'm', system: '', messages: [{ role: 'user' as const, content: 'q' }], tools: [] };
    await expect(client.complete(req)).rejects.toMatchObject({
      code: 'MODEL_BAD_RESPONSE',
      message: expect.stringContaining('choices[0].message'),
    });
    await expect(client.complete(req)).rejects.toMatchObject({
      code: 'MODEL_BAD_RESPONSE',
      message: expect.stringContaining('not JSON'),
    });
    expect(fake.requests).toHaveLength(2);
  });
});
