/**
 * Model provider clients: one provider-neutral chat interface with tool calling, spoken to
 * OpenAI-compatible chat completions and Anthropic messages APIs.
 */
export type {
  AssistantMessage,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  CompleteOptions,
  ModelClient,
  ModelClientState,
  ModelProviderConfig,
  StopReason,
  ToolCall,
  ToolResultMessage,
  ToolSchema,
  Usage,
  UserMessage,
} from './types.js';
export {
  createModelClient,
  MODEL_CLIENT_DEFAULTS,
  type ModelClientOptions,
  type ModelFetch,
} from './client.js';
export {
  isModelError,
  MODEL_ERROR_CODES,
  ModelError,
  redactSecret,
  type ModelErrorCode,
  type ModelErrorInfo,
  type ModelErrorDetails,
} from './errors.js';
export { ANTHROPIC_VERSION, DEFAULT_ANTHROPIC_MAX_TOKENS } from './anthropic.js';
