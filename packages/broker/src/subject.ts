import { BrokerError } from './errors.js';

/** Longest subject accepted, in characters; keeps frames and logs bounded. */
export const MAX_SUBJECT_LENGTH = 512;

function hasWhitespaceOrControl(token: string): boolean {
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return /\s/.test(token);
}

/**
 * Checks a subject with NATS rules so both kinds accept and refuse the same names: dot-separated
 * non-empty tokens without whitespace. Wildcards (`*` for one token, `>` for the rest) are only
 * allowed where `wildcards` is true (subscriptions), never in a subject something is sent to.
 */
export function assertSubject(subject: unknown, wildcards: boolean): asserts subject is string {
  const fail = (why: string): never => {
    throw new BrokerError(
      'BROKER_INVALID_SUBJECT',
      `invalid broker subject ${JSON.stringify(String(subject).slice(0, 80))}: ${why}`,
    );
  };
  if (typeof subject !== 'string' || subject === '')
    fail('a subject is a non-empty string like "control.reload"');
  const s = subject as string;
  if (s.length > MAX_SUBJECT_LENGTH) fail(`longer than ${MAX_SUBJECT_LENGTH} characters`);
  const tokens = s.split('.');
  tokens.forEach((token, i) => {
    if (token === '') fail('empty token (leading, trailing or double dot)');
    if (hasWhitespaceOrControl(token)) fail('whitespace or control characters are not allowed');
    if (token === '*' || token === '>') {
      if (!wildcards) fail('wildcards "*" and ">" are only allowed when subscribing');
      if (token === '>' && i !== tokens.length - 1) fail('">" must be the last token');
    } else if (token.includes('*') || token.includes('>')) {
      fail('"*" and ">" must be whole tokens');
    }
  });
}

/** Whether `subject` (no wildcards) is matched by `pattern` (may contain `*` and a final `>`). */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true;
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    const token = p[i];
    if (token === '>') return s.length > i;
    if (i >= s.length) return false;
    if (token !== '*' && token !== s[i]) return false;
  }
  return p.length === s.length;
}
