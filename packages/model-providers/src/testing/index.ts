/**
 * Loopback fakes of the OpenAI-compatible chat completions API and the Anthropic messages API, for
 * tests of this package and of its users. They bind 127.0.0.1 on a free port, record every request
 * (headers and body) and answer from a scripted queue or a handler.
 */
export type { FakeHandler, FakeModelServer, FakeReply, RecordedRequest } from './fake-server.js';
export {
  createFakeOpenAI,
  openaiCompletion,
  openaiError,
  openaiText,
  type FakeOpenAIOptions,
  type OpenAICompletionSpec,
  type OpenAIErrorOptions,
  type OpenAIToolCallSpec,
} from './fake-openai.js';
export {
  anthropicError,
  anthropicMessage,
  anthropicText,
  createFakeAnthropic,
  type AnthropicMessageSpec,
  type AnthropicToolUseSpec,
  type FakeAnthropicOptions,
} from './fake-anthropic.js';
