import type { ModelProviderConfig, ToolSchema } from '../src/index.js';
import type { FakeModelServer } from '../src/testing/index.js';

export const OPENAI_KEY = 'sk-test-4f9a1c7e2b8d6350aa11';
export const ANTHROPIC_KEY = 'sk-ant-test-91b2c3d4e5f60718bb22';

export function providerFor(
  fake: FakeModelServer,
  type: ModelProviderConfig['type'],
  overrides: Partial<ModelProviderConfig> = {},
): ModelProviderConfig {
  return {
    name: type === 'openai' ? 'main' : 'claude',
    type,
    base_url: fake.baseUrl,
    api_key: type === 'openai' ? OPENAI_KEY : ANTHROPIC_KEY,
    timeout_ms: 5_000,
    max_retries: 2,
    ...overrides,
  };
}

export const weatherTool: ToolSchema = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
  },
};

/** Records the waits between attempts instead of sleeping. */
export function recordingSleep(): {
  delays: number[];
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
} {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms, signal) => {
      delays.push(ms);
      if (signal.aborted) throw signal.reason;
    },
  };
}

/** The JSON body of the `index`-th request the fake received (fails the test when absent). */
export function sentBody(fake: FakeModelServer, index: number): Record<string, any> {
  const req = fake.requests[index];
  if (req === undefined) throw new Error(`the fake received no request #${index}`);
  return req.body as Record<string, any>;
}
