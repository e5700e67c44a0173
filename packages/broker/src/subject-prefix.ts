/**
 * `broker.yaml` `subject_prefix`: several deployments on one NATS server, each with subjects of its own.
 * Every subject this broker sends to or subscribes to gets `<prefix>.` in front; handlers see the subject
 * without it. NATS's own reply subjects (`_INBOX.…`, made by the client for each request) are left as they
 * are, so an answer reaches the requester whatever its prefix.
 */
import { BrokerError } from './errors.js';
import type { Broker, BrokerMessage, PublishOptions } from './types.js';

/** Dot-separated tokens of letters, digits, `_` and `-`; at most 64 characters. */
const PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
export const MAX_SUBJECT_PREFIX_LENGTH = 64;
const INBOX = '_INBOX.';

/** Why `prefix` cannot be a subject prefix, or `null` when it can. */
export function subjectPrefixProblem(prefix: string): string | null {
  if (prefix.length > MAX_SUBJECT_PREFIX_LENGTH) return `longer than ${MAX_SUBJECT_PREFIX_LENGTH} characters`;
  if (!PREFIX.test(prefix))
    return 'use dot-separated tokens of letters, digits, "_" and "-", such as "prod" or "team-a.staging"';
  if (prefix === '_INBOX' || prefix.startsWith(INBOX))
    return 'subjects under _INBOX are reserved for replies';
  return null;
}

export function withSubjectPrefix(inner: Broker, prefix: string): Broker {
  const problem = subjectPrefixProblem(prefix);
  if (problem !== null)
    throw new BrokerError('BROKER_CONFIG_INVALID', `broker.yaml: subject_prefix "${prefix}": ${problem}`);
  const head = `${prefix}.`;
  const out = (subject: string) => (subject.startsWith(INBOX) ? subject : head + subject);
  const strip = (msg: BrokerMessage): BrokerMessage =>
    msg.subject.startsWith(head) ? { ...msg, subject: msg.subject.slice(head.length) } : msg;
  const opts = (o?: PublishOptions) => (o?.reply === undefined ? o : { ...o, reply: out(o.reply) });
  return {
    kind: inner.kind,
    publish: (subject, data, o) => inner.publish(out(subject), data, opts(o)),
    subscribe(subject, handler) {
      const sub = inner.subscribe(head + subject, (msg) => handler(strip(msg)));
      return { subject, unsubscribe: () => sub.unsubscribe() };
    },
    request: (subject, data, o) => inner.request(head + subject, data, o),
    requestMany: (subject, data, o) => inner.requestMany(head + subject, data, o),
    flush: () => inner.flush(),
    close: () => inner.close(),
  };
}
