/** Provider-neutral chat types shared by every provider mapping. */

/** A provider entry from `llm.yaml`, already resolved (secrets read, defaults applied). */
export interface ModelProviderConfig {
  /** The key under `providers` in `llm.yaml`; used in logs and errors. */
  name: string;
  type: 'openai' | 'anthropic';
  /** OpenAI-compatible: includes the version prefix (`https://api.openai.com/v1`). Anthropic: host root. */
  base_url: string;
  api_key: string;
  /** Budget of one HTTP attempt (connect, headers and body), in milliseconds. */
  timeout_ms: number;
  /** Retries after the first attempt, for 429, 5xx, network errors and timeouts. */
  max_retries: number;
}

/** A tool the model may call; `parameters` is a JSON Schema for the arguments object. */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A tool call requested by the model. */
export interface ToolCall {
  id: string;
  name: string;
  /**
   * The parsed arguments (normally an object). When the provider sent arguments that are not valid
   * JSON, this holds the raw string and `argumentsError` says why.
   */
  arguments: unknown;
  /**
   * Set when the arguments could not be parsed. The text is written for the model: return it as an
   * error tool result (`isError: true`) instead of running the tool.
   */
  argumentsError?: string;
}

export interface UserMessage {
  role: 'user';
  content: string;
}

export interface AssistantMessage {
  role: 'assistant';
  /** Text of the turn; may be empty when the turn only calls tools. */
  content?: string;
  toolCalls?: ToolCall[];
}

export interface ToolResultMessage {
  role: 'tool';
  /** The `id` of the `ToolCall` this answers. */
  toolCallId: string;
  content: string;
  isError?: boolean;
}

export type ChatMessage = UserMessage | AssistantMessage | ToolResultMessage;

export interface ChatRequest {
  model: string;
  system: string;
  messages: ChatMessage[];
  tools: ToolSchema[];
  /** Upper bound of generated tokens. Anthropic requires one: 1024 when absent. */
  maxTokens?: number;
}

export type StopReason = 'end' | 'tool_use' | 'max_tokens' | 'other';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatResponse {
  text: string;
  toolCalls: ToolCall[];
  stopReason: StopReason;
  usage?: Usage;
}

export interface CompleteOptions {
  /** Cancels the call, including any wait between retries. */
  signal?: AbortSignal;
}

export type ModelClientState = 'active' | 'retired' | 'closed';

/** One provider, one connection pool. Build one per configuration snapshot; retire the old one. */
export interface ModelClient {
  /** The provider name from `llm.yaml`. */
  readonly provider: string;
  readonly type: ModelProviderConfig['type'];
  complete(req: ChatRequest, opts?: CompleteOptions): Promise<ChatResponse>;
  /**
   * Refuses new calls from now on. Resolves once the pool is closed: when the last in-flight call
   * ends, or at the retire deadline, when the calls still running are aborted. Idempotent.
   */
  retire(): Promise<void>;
  /** Calls started and not yet settled (including those waiting between retries). */
  readonly inFlight: number;
  /** `active`, then `retired` (draining), then `closed` (pool closed). */
  readonly state: ModelClientState;
}
