/**
 * `@agent/agent-runtime`: sessions and turns on configuration snapshots, the tool registry with the
 * built-in `send_message`, transcripts and conversation memory.
 */
export {
  createAgentRuntime,
  type AgentRuntime,
  type AgentRuntimeOptions,
  type AgentRuntimeState,
  type ChannelInstanceReport,
  type DeliverRequest,
  type StartReport,
  type StopReport,
} from './runtime.js';
export type {
  ChannelHosting,
  InboundOutcome,
  InboundOwnership,
  InboundSettle,
  InboundSide,
} from './hosting.js';
export {
  AGENT_RUNTIME_ERROR_CODES,
  AGENT_RUNTIME_RESULT_CODES,
  AgentRuntimeError,
  isAgentRuntimeError,
  type AgentRuntimeCodeInfo,
  type AgentRuntimeErrorCode,
  type AgentRuntimeResultCode,
} from './errors.js';
export {
  isToolAllowed,
  MAX_TOOL_RESULT_CHARS,
  ToolCallError,
  type ToolContext,
  type ToolDefinition,
  type ToolProvider,
} from './tools.js';
export { isRecipientAllowed, SEND_MESSAGE_TOOL, SendRejectedError } from './send-message.js';
export { matchBinding, resolveOutbound, type BindingMatch, type OutboundTarget } from './routing.js';
export {
  MEMORY_ROWS_PER_SESSION,
  openConversationMemory,
  type ConversationMemory,
  type MemoryMessage,
} from './memory.js';
export {
  sessionKeyString,
  transcriptFileName,
  type SessionKey,
  type TranscriptRecord,
  type TranscriptRecordType,
} from './transcripts.js';
export { buildSystemPrompt, loadSkills, MAX_SKILLS_CHARS } from './prompt.js';
export { APOLOGY_TEXT, TOOL_ROUNDS_EXHAUSTED_TEXT } from './turn.js';
export type { ModelClientFactory } from './model-clients.js';
