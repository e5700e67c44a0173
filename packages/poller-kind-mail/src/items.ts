/** From parsed messages to poll items: drafts, allowlist, `extract`, `require_fields`, oldest first. */
import type { PollItem, TickContext } from '@agent/poller-core';
import type { MailConfig } from './config.js';
import { compilePattern, extractOne } from './extract.js';
import type { MailMessage } from './message.js';
import { senderAllowed } from './sender.js';

/** Labels of messages that are never dispatched: the owner's own drafts, sent and scheduled mail. */
const SKIPPED_LABELS: readonly string[] = ['DRAFT', 'SENT', 'SCHEDULED'];

/** Compiled `extract` patterns, per config object (configs are frozen per job definition). */
const compiled = new WeakMap<object, [string, RegExp][]>();
function patternsOf(config: MailConfig): [string, RegExp][] {
  let p = compiled.get(config);
  if (!p) {
    p = Object.entries(config.extract ?? {}).map(([k, v]) => [k, compilePattern(v)]);
    compiled.set(config, p);
  }
  return p;
}

/**
 * The items of a tick, oldest first by receipt time (the id breaks ties). `markRead` becomes each item's
 * `onDelivered` when `mark_read_on_dispatch` is set.
 */
export function mailItems(
  messages: readonly MailMessage[],
  config: MailConfig,
  logger: TickContext['logger'],
  markRead: (m: MailMessage) => Promise<void>,
): PollItem[] {
  const patterns = patternsOf(config);
  const required = config.require_fields ?? [];
  const allow = config.sender_allowlist ?? [];
  const picked: { m: MailMessage; extracted: Record<string, string> }[] = [];
  let filtered = 0;
  for (const m of messages) {
    if (m.labelIds.some((l) => SKIPPED_LABELS.includes(l))) continue;
    if (!senderAllowed(m.fromAddress, allow)) {
      filtered++;
      continue;
    }
    const extracted: Record<string, string> = {};
    const text = m.text || m.snippet;
    for (const [name, re] of patterns) {
      const r = extractOne(re, text);
      if (r.value !== undefined) extracted[name] = r.value;
      else if (r.timedOut)
        logger.warn('mail extract pattern timed out; the field is left empty', {
          field: name,
          message_id: m.id,
        });
    }
    if (required.some((f) => extracted[f] === undefined)) {
      filtered++;
      continue;
    }
    picked.push({ m, extracted });
  }
  if (filtered) logger.debug('mail messages filtered out', { filtered });
  picked.sort(
    (a, b) => a.m.internalDate - b.m.internalDate || (a.m.id < b.m.id ? -1 : a.m.id > b.m.id ? 1 : 0),
  );
  return picked.map(({ m, extracted }) => {
    const fields: Record<string, string> = {
      ...extracted,
      snippet: m.snippet,
      subject: m.subject,
      from: m.from,
      from_address: m.fromAddress ?? '',
      date: m.date,
      id: m.id,
      thread_id: m.threadId,
    };
    const item: PollItem = { id: m.id, fields };
    if (config.mark_read_on_dispatch) item.onDelivered = () => markRead(m);
    return item;
  });
}
