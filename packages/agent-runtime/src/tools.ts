/** Tool registry, `allowed_tools` filtering, argument checks and execution of one tool call. */
import { compileSchema, type ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import type { ToolCall, ToolSchema } from '@agent/model-providers';
import { errorCode, errorMessage, type AgentRuntimeResultCode } from './errors.js';

/** What a tool handler gets besides its arguments. */
export interface ToolContext {
  agentId: string;
  /** The binding the turn came in on. */
  bindingIndex: number;
  /** The snapshot the turn captured at its start; use it, never `store.current()`. */
  snapshot: ConfigSnapshot;
  logger: Logger;
  /** Aborted when the turn times out or the runtime stops. */
  signal: AbortSignal;
}

/**
 * A tool an agent can call. `parameters` is the JSON Schema of `args` (checked before the handler runs).
 * A handler that needs only `{agentId, logger, signal}` fits too.
 */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Readonly<Record<string, unknown>>;
  handler(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown>;
}

/** Gives the tools of one agent; called at the start of every turn. */
export type ToolProvider = (agentId: string) => readonly ToolDefinition[];

/** Longest tool result handed to the model, in UTF-16 code units. */
export const MAX_TOOL_RESULT_CHARS = 32_000;

/** `allowed_tools` semantics: `"*"` allows every tool, otherwise exact names. */
export function isToolAllowed(allowed: readonly string[], name: string): boolean {
  return allowed.includes('*') || allowed.includes(name);
}

export interface ToolSet {
  /** Every tool of the agent, by name (first definition of a name wins). */
  all: ReadonlyMap<string, ToolDefinition>;
  /** The tools the binding allows; the only ones the model sees and may run. */
  visible: ReadonlyMap<string, ToolDefinition>;
  schemas: ToolSchema[];
}

export function collectTools(
  agentId: string,
  builtins: readonly ToolDefinition[],
  providers: readonly ToolProvider[],
  allowed: readonly string[],
  logger: Logger,
): ToolSet {
  const all = new Map<string, ToolDefinition>();
  const add = (tool: ToolDefinition): void => {
    if (all.has(tool.name)) {
      logger.warn('tool name taken', { agent_id: agentId, tool: tool.name });
      return;
    }
    all.set(tool.name, tool);
  };
  for (const t of builtins) add(t);
  for (const provider of providers) {
    let tools: readonly ToolDefinition[];
    try {
      tools = provider(agentId);
    } catch (err) {
      // A broken tool set must not take the turn down; its tools are simply absent.
      logger.error('tool provider failed', {
        agent_id: agentId,
        code: errorCode(err),
        error: errorMessage(err),
      });
      continue;
    }
    for (const t of tools) add(t);
  }
  const visible = new Map([...all].filter(([name]) => isToolAllowed(allowed, name)));
  const schemas: ToolSchema[] = [...visible.values()].map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters as Record<string, unknown>,
  }));
  return { all, visible, schemas };
}

type ToolCallStatus = 'ok' | 'not_allowed' | 'bad_arguments' | 'rejected' | 'failed';

/**
 * Thrown by a handler to refuse a call: the model gets `message` verbatim as an error result (other
 * errors are prefixed with "tool <name> failed:").
 */
export class ToolCallError extends Error {
  readonly code: string;
  constructor(message: string, code: string = 'RUNTIME_TOOL_REFUSED' satisfies AgentRuntimeResultCode) {
    super(message);
    this.name = 'ToolCallError';
    this.code = code;
  }
}

export interface ToolCallOutcome {
  status: ToolCallStatus;
  /** What the model gets as the tool result. */
  content: string;
  isError: boolean;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function checkArguments(
  tool: ToolDefinition,
  args: unknown,
): { args: Record<string, unknown> } | { error: string } {
  if (!isPlainObject(args)) return { error: `arguments of ${tool.name} must be a JSON object` };
  // A copy: the schema check fills in defaults.
  const copy = structuredClone(args);
  let validate: ReturnType<typeof compileSchema>;
  try {
    validate = compileSchema(tool.parameters);
  } catch {
    return { error: `tool ${tool.name} has an invalid parameter schema and cannot be called` };
  }
  if (validate(copy)) return { args: copy };
  const problems = (validate.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath === '' ? 'arguments' : e.instancePath} ${e.message ?? 'is invalid'}`);
  return { error: `invalid arguments for ${tool.name}: ${problems.join('; ')}` };
}

function render(result: unknown): string {
  let text: string;
  if (typeof result === 'string') text = result;
  else if (result === undefined) text = 'ok';
  else {
    try {
      text = JSON.stringify(result) ?? 'ok';
    } catch {
      text = String(result);
    }
  }
  return text.length > MAX_TOOL_RESULT_CHARS ? `${text.slice(0, MAX_TOOL_RESULT_CHARS)}…[truncated]` : text;
}

/** Settles with `work`, or rejects as soon as `signal` aborts (a handler that ignores it cannot wedge a session). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Runs one tool call the model asked for. A tool the binding does not allow is never run; bad
 * arguments never reach the handler; a handler error becomes an error result. Throws only the
 * signal's reason once the turn was cancelled.
 */
export async function runToolCall(
  call: ToolCall,
  tools: ToolSet,
  ctx: ToolContext,
): Promise<ToolCallOutcome> {
  const tool = tools.visible.get(call.name);
  const fields = { agent_id: ctx.agentId, binding_index: ctx.bindingIndex, tool: call.name };
  if (!tool) {
    ctx.logger.warn('tool_call refused', { ...fields, reason: 'not allowed on this binding' });
    return {
      status: 'not_allowed',
      isError: true,
      content: `tool ${call.name} is not available here; use only the tools you were given`,
    };
  }
  if (call.argumentsError !== undefined) {
    return { status: 'bad_arguments', isError: true, content: call.argumentsError };
  }
  const checked = checkArguments(tool, call.arguments);
  if ('error' in checked) {
    ctx.logger.warn('tool_call bad arguments', fields);
    return { status: 'bad_arguments', isError: true, content: checked.error };
  }
  try {
    const result = await untilAborted(tool.handler(checked.args, ctx), ctx.signal);
    return { status: 'ok', isError: false, content: ctx.snapshot.redact(render(result)) };
  } catch (err) {
    // The turn was cancelled (timeout, shutdown): the turn handles that, not the model.
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (err instanceof ToolCallError) {
      return { status: 'rejected', isError: true, content: ctx.snapshot.redact(err.message) };
    }
    ctx.logger.warn('tool_call failed', { ...fields, code: errorCode(err) });
    return {
      status: 'failed',
      isError: true,
      content: ctx.snapshot.redact(`tool ${call.name} failed: ${errorMessage(err)}`),
    };
  }
}
