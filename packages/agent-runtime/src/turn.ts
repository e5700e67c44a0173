/** One turn: everything inside it reads the snapshot captured at its start. */
import type { InboundMessage, SendResult } from '@agent/channels';
import type { Binding, ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import type { ChatMessage } from '@agent/model-providers';
import { errorCode, errorMessage } from './errors.js';
import type { ConversationMemory } from './memory.js';
import type { ClientLease } from './model-clients.js';
import { buildSystemPrompt } from './prompt.js';
import { runToolCall, type ToolSet } from './tools.js';
import { turnFailureAction, type TurnFailureStage } from './turn-failure.js';
import { sessionKeyString, type SessionKey, type TranscriptRecord } from './transcripts.js';

/** Sent to the chat when a turn fails (model error, timeout). Not sent when the runtime stops. */
export const APOLOGY_TEXT = 'Sorry, something went wrong and I could not answer. Please try again later.';

/** Sent when the model still wanted tools after `max_tool_rounds` calls and gave no text. */
export const TOOL_ROUNDS_EXHAUSTED_TEXT =
  'Sorry, I could not finish this within the number of steps I am allowed. Please try a simpler request.';

export type TurnAbortReason = 'timeout' | 'shutdown';

export interface TurnDeps {
  logger: Logger;
  now: () => Date;
  memory: ConversationMemory | null;
  skills(agentId: string, skillsDir: string): string;
  tools(agentId: string, binding: Readonly<Binding>): ToolSet;
  transcript(records: TranscriptRecord[]): Promise<void>;
  /** Sends through the instance the message came in on. */
  reply(msg: InboundMessage, text: string): Promise<SendResult>;
}

export interface TurnInput {
  snapshot: ConfigSnapshot;
  lease: ClientLease;
  key: SessionKey;
  binding: Readonly<Binding>;
  msg: InboundMessage;
  signal: AbortSignal;
  abortReason(): TurnAbortReason | undefined;
  /** The caller can run the message again: a failure to read memory hands it back instead of apologizing. */
  canRetry: boolean;
}

/** `handed_back`: ended without an answer because the caller will run the message again. */
type TurnStatus = 'replied' | 'no_reply' | 'failed' | 'aborted' | 'handed_back';

export interface TurnResult {
  status: TurnStatus;
  /** Model calls made. */
  modelCalls: number;
  reply?: string;
}

export async function runTurn(deps: TurnDeps, input: TurnInput): Promise<TurnResult> {
  const { snapshot, key, binding, msg, signal } = input;
  const { logger } = deps;
  const agent = snapshot.agents.get(key.agentId);
  const base = (type: TranscriptRecord['type'], fields: Record<string, unknown>): TranscriptRecord => ({
    ts: deps.now().toISOString(),
    type,
    snapshot_version: snapshot.version,
    ...fields,
  });
  const log = { agent_id: key.agentId, binding_index: key.bindingIndex, snapshot_version: snapshot.version };
  await deps.transcript([
    base('inbound', {
      plugin: msg.plugin,
      instance: msg.instance,
      chat_id: msg.chatId,
      sender_id: msg.senderId,
      message_id: msg.messageId,
      text: msg.text,
    }),
  ]);
  if (!agent) {
    // Agents are only added or removed by a restart; this guards against a hand-built snapshot.
    logger.error('turn failed', {
      ...log,
      code: 'RUNTIME_UNKNOWN_AGENT',
      error: 'agent not in the snapshot',
    });
    return { status: 'failed', modelCalls: 0 };
  }
  const def = agent.definition;

  const system = buildSystemPrompt(
    def.system_prompt,
    binding.system_prompt_extra,
    deps.skills(key.agentId, agent.skillsDir),
  );
  const tools = deps.tools(key.agentId, binding);
  const memoryOn = deps.memory !== null && snapshot.memory.enabled;
  const keyString = sessionKeyString(key);
  const messages: ChatMessage[] = [];

  let finalText = '';
  let modelCalls = 0;
  let failed = false;
  let stage: TurnFailureStage = 'history';
  try {
    // Inside the try: a memory that cannot be read (PostgreSQL away) fails the turn (see turnFailureAction).
    if (memoryOn) messages.push(...(await deps.memory!.history(keyString, snapshot.memory.max_messages)));
    stage = 'later';
    messages.push({ role: 'user', content: msg.text });
    const client = input.lease.client(def.model.provider);
    const maxRounds = def.model.max_tool_rounds;
    for (let round = 1; round <= maxRounds; round++) {
      const res = await client.complete(
        { model: def.model.name, system, messages, tools: tools.schemas, maxTokens: def.model.max_tokens },
        { signal },
      );
      modelCalls += 1;
      await deps.transcript([
        base('model_call', {
          round,
          provider: def.model.provider,
          model: def.model.name,
          stop_reason: res.stopReason,
          tool_calls: res.toolCalls.map((c) => c.name),
          text_chars: res.text.length,
          ...(res.usage
            ? { input_tokens: res.usage.inputTokens, output_tokens: res.usage.outputTokens }
            : {}),
        }),
      ]);
      if (res.toolCalls.length === 0) {
        finalText = res.text;
        break;
      }
      if (round === maxRounds) {
        logger.warn('turn tool rounds exhausted', { ...log, max_tool_rounds: maxRounds });
        finalText = res.text.trim() !== '' ? res.text : TOOL_ROUNDS_EXHAUSTED_TEXT;
        break;
      }
      messages.push({ role: 'assistant', content: res.text, toolCalls: res.toolCalls });
      for (const call of res.toolCalls) {
        signal.throwIfAborted();
        await deps.transcript([
          base('tool_call', {
            id: call.id,
            name: call.name,
            arguments: snapshot.redact(safeJson(call.arguments)),
          }),
        ]);
        const outcome = await runToolCall(call, tools, {
          agentId: key.agentId,
          bindingIndex: key.bindingIndex,
          snapshot,
          logger: logger.child({ agent_id: key.agentId, tool: call.name }),
          signal,
        });
        await deps.transcript([
          base('tool_result', {
            id: call.id,
            name: call.name,
            status: outcome.status,
            is_error: outcome.isError,
            content: outcome.content,
          }),
        ]);
        messages.push({
          role: 'tool',
          toolCallId: call.id,
          content: outcome.content,
          isError: outcome.isError,
        });
      }
    }
  } catch (err) {
    const reason = input.abortReason();
    if (reason === 'shutdown') {
      logger.warn('turn aborted', { ...log, reason });
      await deps.transcript([base('turn_error', { code: 'RUNTIME_STOPPED', reason })]);
      return { status: 'aborted', modelCalls };
    }
    const code = reason === 'timeout' ? 'RUNTIME_TURN_TIMEOUT' : errorCode(err);
    if (turnFailureAction({ stage, code, canRetry: input.canRetry }) === 'hand_back') {
      // Nothing was sent and nothing is stored: the caller runs the message again (here or elsewhere).
      const error = snapshot.redact(errorMessage(err));
      logger.warn('turn handed back', { agent_id: key.agentId, message_id: msg.messageId, code, error });
      await deps.transcript([base('turn_handed_back', { message_id: msg.messageId, code, error })]);
      return { status: 'handed_back', modelCalls };
    }
    failed = true;
    logger.error('turn failed', { ...log, code, error: snapshot.redact(errorMessage(err)) });
    await deps.transcript([base('turn_error', { code, error: snapshot.redact(errorMessage(err)) })]);
    finalText = APOLOGY_TEXT;
  }

  if (finalText.trim() === '') {
    logger.warn('turn produced no reply', log);
    return { status: 'no_reply', modelCalls };
  }
  try {
    const sent = await deps.reply(msg, finalText);
    await deps.transcript([base('outbound', { to: msg.chatId, text: finalText, ids: sent.ids })]);
  } catch (err) {
    logger.error('reply send failed', {
      ...log,
      plugin: msg.plugin,
      instance: msg.instance,
      code: errorCode(err),
    });
    await deps.transcript([base('outbound', { to: msg.chatId, text: finalText, error: errorCode(err) })]);
    return { status: 'failed', modelCalls, reply: finalText };
  }
  if (!failed && memoryOn) {
    try {
      await deps.memory!.appendExchange(keyString, msg.text, finalText, deps.now());
    } catch (err) {
      logger.error('memory write failed', { ...log, code: errorCode(err) });
    }
  }
  return { status: failed ? 'failed' : 'replied', modelCalls, reply: finalText };
}

function safeJson(v: unknown): string {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return String(v);
  }
}
