/** Stable error codes of the agent runtime; match on `code`, never on message text. */
export type AgentRuntimeErrorCode =
  | 'RUNTIME_UNKNOWN_AGENT'
  | 'RUNTIME_NO_BINDING'
  | 'RUNTIME_NO_INSTANCE'
  | 'RUNTIME_NOT_RUNNING'
  | 'RUNTIME_TURN_TIMEOUT'
  | 'RUNTIME_MEMORY_FAILED';

export const AGENT_RUNTIME_ERROR_CODES: readonly AgentRuntimeErrorCode[] = Object.freeze([
  'RUNTIME_UNKNOWN_AGENT',
  'RUNTIME_NO_BINDING',
  'RUNTIME_NO_INSTANCE',
  'RUNTIME_NOT_RUNNING',
  'RUNTIME_TURN_TIMEOUT',
  'RUNTIME_MEMORY_FAILED',
]);

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
  return (
    err instanceof Error &&
    typeof code === 'string' &&
    (AGENT_RUNTIME_ERROR_CODES as readonly string[]).includes(code)
  );
}

/** `code` of any error-like value, for log fields. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'INTERNAL';
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
