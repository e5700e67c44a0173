/** What one code means and what to do about it. */
export interface AgentRuntimeCodeInfo {
  readonly meaning: string;
  readonly action: string;
}

/** Codes of `AgentRuntimeError`; match on `code`, never on message text. */
export const AGENT_RUNTIME_ERROR_CODES = {
  RUNTIME_UNKNOWN_AGENT: {
    meaning: '`deliver` named an agent that is not in the snapshot.',
    action: 'Use an agent id that exists (a file name in `agents.d/`).',
  },
  RUNTIME_NO_BINDING: {
    meaning: 'The agent has no binding whose `plugin` is the requested channel.',
    action: 'Add an `inbound_bindings` entry for that plugin, or deliver on a channel it has.',
  },
  RUNTIME_NO_INSTANCE: {
    meaning: "The binding's instance is not running, or the plugin has no instance.",
    action: 'Define the instance in `plugins/<plugin>.yaml` and restart.',
  },
  RUNTIME_NOT_RUNNING: {
    meaning: '`handleInbound` or `deliver` before `start()` or after `stop()`, or `start()` called twice.',
    action: 'Start the runtime; a channel re-delivers refused inbound messages later.',
  },
  RUNTIME_TURN_TIMEOUT: {
    meaning: 'A turn ran over `runtime.sessions.turn_timeout_ms` (logged with `turn failed`).',
    action: 'Raise the limit or look at slow tools / model calls.',
  },
  RUNTIME_MEMORY_FAILED: {
    meaning:
      'The memory database could not be opened (thrown by `start()`, `openConversationMemory` and `createPostgresMemory`), or PostgreSQL memory could not be read or written (logged with `turn failed`, `turn handed back` or `memory write failed`).',
    action:
      'Fix `memory.yaml` `path` or make its directory writable; in cluster mode, check that PostgreSQL answers.',
  },
} as const satisfies Record<string, AgentRuntimeCodeInfo>;

export type AgentRuntimeErrorCode = keyof typeof AGENT_RUNTIME_ERROR_CODES;

/**
 * Codes that are reported, never thrown to callers: tool results the model sees, and transcript entries.
 * Kept apart so that `isAgentRuntimeError` stays true for thrown errors only.
 */
export const AGENT_RUNTIME_RESULT_CODES = {
  RUNTIME_SEND_REJECTED: {
    meaning:
      "`send_message` refused a recipient outside the binding's allowlist (a tool result the model sees, never thrown to callers).",
    action: "Add the recipient to the binding's `outbound_allowlist` if it should be reachable.",
  },
  RUNTIME_TOOL_REFUSED: {
    meaning: 'A tool refused a call (the default code of `ToolCallError`; a tool result the model sees).',
    action: 'Read the message the tool gave; a tool may use a code of its own.',
  },
  RUNTIME_STOPPED: {
    meaning: 'In a transcript: a turn aborted by `stop()` (shutdown).',
    action: 'Nothing: the message was accepted but not answered.',
  },
} as const satisfies Record<string, AgentRuntimeCodeInfo>;

export type AgentRuntimeResultCode = keyof typeof AGENT_RUNTIME_RESULT_CODES;

export class AgentRuntimeError extends Error {
  readonly code: AgentRuntimeErrorCode;
  constructor(code: AgentRuntimeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentRuntimeError';
    this.code = code;
  }
}

/** True for an `AgentRuntimeError` (checked by code, so it works across package copies). */
export function isAgentRuntimeError(err: unknown): err is AgentRuntimeError {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === 'string' && Object.hasOwn(AGENT_RUNTIME_ERROR_CODES, code);
}

/** `code` of any error-like value, for log fields. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'INTERNAL';
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
