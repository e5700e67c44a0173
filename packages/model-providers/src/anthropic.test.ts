import { createMemoryLogger } from '@agent/log';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ANTHROPIC_KEY, providerFor, sentBody, weatherTool } from '../test/helpers.js';
import { createModelClient, type ChatMessage, type ModelClient } from './index.js';
import {
  anthropicMessage,
  anthropicText,
  createFakeAnthropic,
  type FakeModelServer,
} from './testing/index.js';

let fake: FakeModelServer;
let client: ModelClient;

beforeEach(async () => {
  fake = await createFakeAnthropic({ apiKey: ANTHROPIC_KEY });
  client = createModelClient(providerFor(fake, 'anthropic'), { logger: createMemoryLogger() });
});

afterEach(async () => {
  await client.retire();
  await fake.close();
});

describe('Anthropic messages', () => {
  it('round trip: two tool uses, then the final text after both tool results', async () => {
    fake.reply(
      anthropicMessage({
        text: 'Checking both.',
        toolUses: [
          { id: 'toolu_1', name: 'get_weather', input: { city: 'Lisbon' } },
          { id: 'toolu_2', name: 'get_weather', input: { city: 'Porto' } },
        ],
        usage: { input_tokens: 120, output_tokens: 30 },
      }),
      anthropicText('Lisbon is sunny; Porto is unknown.'),
    );
    const messages: ChatMessage[] = [{ role: 'user', content: 'Weather in Lisbon and Porto?' }];
    const first = await client.complete({
      model: 'claude-sonnet-4-5',
      system: 'You are terse.',
      messages,
      tools: [weatherTool],
    });
    expect(first).toEqual({
      text: 'Checking both.',
      toolCalls: [
        { id: 'toolu_1', name: 'get_weather', arguments: { city: 'Lisbon' } },
        { id: 'toolu_2', name: 'get_weather', arguments: { city: 'Porto' } },
      ],
      stopReason: 'tool_use',
      usage: { inputTokens: 120, outputTokens: 30 },
    });

    messages.push(
      { role: 'assistant', content: first.text, toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: 'toolu_1', content: 'sunny' },
      { role: 'tool', toolCallId: 'toolu_2', content: 'station offline', isError: true },
    );
    const second = await client.complete({
      model: 'claude-sonnet-4-5',
      system: 'You are terse.',
      messages,
      tools: [weatherTool],
      maxTokens: 300,
    });
    expect(second).toMatchObject({
      text: 'Lisbon is sunny; Porto is unknown.',
      toolCalls: [],
      stopReason: 'end',
    });

    const [r1, r2] = fake.requests;
    expect(r1?.path).toBe('/v1/messages');
    expect(r1?.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(r1?.headers['anthropic-version']).toBe('2023-06-01');
    expect(r1?.headers.authorization).toBeUndefined();
    expect(r1?.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      system: 'You are terse.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Lisbon and Porto?' }] }],
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather for a city.',
          input_schema: weatherTool.parameters,
        },
      ],
    });
    expect(r2?.body).toMatchObject({ max_tokens: 300 });
    // Consecutive tool results travel in one user message.
    expect(sentBody(fake, 1).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Lisbon and Porto?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Lisbon' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Porto' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'station offline', is_error: true },
        ],
      },
    ]);
  });

  it('omits empty text and system, and merges a user note that follows tool results', async () => {
    fake.reply(anthropicText('ok'));
    await client.complete({
      model: 'claude',
      system: '',
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 't1', name: 'x', arguments: 'not json', argumentsError: 'bad' }],
        },
        { role: 'tool', toolCallId: 't1', content: 'bad', isError: true },
        { role: 'user', content: 'and then?' },
      ],
      tools: [],
    });
    const body = fake.requests[0]?.body as Record<string, unknown>;
    expect(body).not.toHaveProperty('system');
    expect(body).not.toHaveProperty('tools');
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'x', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'bad', is_error: true },
          { type: 'text', text: 'and then?' },
        ],
      },
    ]);
  });

  it('maps stop reasons and skips block types it does not use', async () => {
    fake.reply(
      anthropicMessage({ text: 'trunc', stopReason: 'max_tokens' }),
      anthropicMessage({ text: 'done', stopReason: 'stop_sequence' }),
      {
        status: 200,
        body: {
          id: 'msg_x',
          type: 'message',
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: '…', signature: 's' },
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
          stop_reason: 'refusal',
          usage: { input_tokens: 1, output_tokens: 1 },
        },
      },
    );
    const req = { model: 'c', system: '', messages: [{ role: 'user' as const, content: 'q' }], tools: [] };
    expect((await client.complete(req)).stopReason).toBe('max_tokens');
    expect((await client.complete(req)).stopReason).toBe('end');
    expect(await client.complete(req)).toMatchObject({ text: 'ab', stopReason: 'other' });
  });

  it('reports a body without content blocks as MODEL_BAD_RESPONSE', async () => {
    fake.reply({ status: 200, body: { type: 'message', role: 'assistant' } });
    await expect(
      client.complete({ model: 'c', system: '', messages: [{ role: 'user', content: 'q' }], tools: [] }),
    ).rejects.toMatchObject({ code: 'MODEL_BAD_RESPONSE', status: 200 });
  });
});
