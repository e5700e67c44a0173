/** The built-in `send_message` tool: sends only to recipients in the binding's `outbound_allowlist`. */
import type { SendResult } from '@agent/channels';
import type { ConfigSnapshot } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import { ToolCallError, type ToolDefinition } from './tools.js';

export const SEND_MESSAGE_TOOL = 'send_message';

/** Sends through the agent's binding of `channel` as resolved in `snapshot`. */
export type SnapshotDeliver = (req: {
  snapshot: ConfigSnapshot;
  agentId: string;
  bindingIndex: number;
  channel: string;
  to: string;
  text: string;
}) => Promise<SendResult>;

/** Recipient ids compare exactly after trimming both sides; no other normalisation. */
export function isRecipientAllowed(allowlist: readonly string[] | undefined, recipient: string): boolean {
  const wanted = recipient.trim();
  return (allowlist ?? []).some((r) => r.trim() === wanted);
}

/** A send to a recipient outside the allowlist; the model gets the message as the tool result. */
export class SendRejectedError extends ToolCallError {
  constructor(message: string) {
    super(message, 'RUNTIME_SEND_REJECTED');
    this.name = 'SendRejectedError';
  }
}

export function createSendMessageTool(deliver: SnapshotDeliver, logger: Logger): ToolDefinition {
  return {
    name: SEND_MESSAGE_TOOL,
    description:
      "Send a text message to a recipient on a channel. Only recipients on this conversation's outbound allowlist for that channel can be reached.",
    parameters: {
      type: 'object',
      additionalProperties: false,
      required: ['channel', 'to', 'text'],
      properties: {
        channel: { type: 'string', minLength: 1, description: 'Channel plugin name, e.g. chat_b.' },
        to: { type: 'string', minLength: 1, description: 'Recipient id on that channel.' },
        text: { type: 'string', minLength: 1, description: 'Message text.' },
      },
    },
    async handler(args, ctx) {
      const channel = String(args.channel);
      const recipient = String(args.to).trim();
      const text = String(args.text);
      const binding = ctx.snapshot.agents.get(ctx.agentId)?.definition.inbound_bindings[ctx.bindingIndex];
      if (!isRecipientAllowed(binding?.outbound_allowlist[channel], recipient)) {
        const reason = `recipient "${recipient}" is not in this agent's outbound allowlist for channel "${channel}"`;
        // Exactly these fields: operators alert on this record.
        logger.error('tool_call rejected', { agent_id: ctx.agentId, channel, recipient, reason });
        throw new SendRejectedError(`send_message rejected: ${reason}`);
      }
      const result = await deliver({
        snapshot: ctx.snapshot,
        agentId: ctx.agentId,
        bindingIndex: ctx.bindingIndex,
        channel,
        to: recipient,
        text,
      });
      return { sent: true, channel, to: recipient, ids: result.ids };
    },
  };
}
