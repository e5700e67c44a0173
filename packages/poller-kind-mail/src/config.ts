/** The `mail` job config: JSON Schema, defaults and the checks the schema cannot express. */
import { baseConfigProperties, validateTemplate, withBaseConfig } from '@agent/poller-core';
import type { FromSchema } from 'json-schema-to-ts';
import { extractProblems } from './extract.js';
import { normalizeAllowlistPattern } from './sender.js';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

/** Placeholders every message provides; `extract` names add to them. */
const MAIL_PLACEHOLDERS = ['snippet', 'subject', 'from', 'from_address', 'date', 'id', 'thread_id'] as const;

const MAIL_DEFAULTS = {
  newer_than: '2d',
  max_per_tick: 20,
  dispatch_delay_ms: 1000,
  mark_read_on_dispatch: true,
} as const;

export const mailConfigSchema = withBaseConfig({
  additionalProperties: false,
  required: ['query'],
  properties: {
    query: {
      type: 'string',
      maxLength: 2000,
      description:
        'Mailbox search query (search-box syntax, e.g. `from:shop.example subject:order`); ` newer_than:<newer_than>` is appended. Add `is:unread` to see unread mail only.',
    },
    newer_than: {
      type: 'string',
      pattern: '^[1-9][0-9]{0,3}[dmy]$',
      default: MAIL_DEFAULTS.newer_than,
      description:
        'Look-back window: days (`2d`), months (`1m`) or years (`1y`). Bounds back-fill and every listing.',
    },
    max_per_tick: { ...baseConfigProperties.max_per_tick, default: MAIL_DEFAULTS.max_per_tick },
    dispatch_delay_ms: {
      ...baseConfigProperties.dispatch_delay_ms,
      default: MAIL_DEFAULTS.dispatch_delay_ms,
    },
    sender_allowlist: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: [],
      description: 'Allowed senders: exact addresses, or domains (matching subdomains too). Empty: everyone.',
    },
    extract: {
      type: 'object',
      additionalProperties: { type: 'string', minLength: 1, maxLength: 1000 },
      default: {},
      description: 'name -> regex; capture group 1 on the decoded body becomes {name}.',
    },
    require_fields: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: [],
      description: 'Extract names that must have a value; other messages are skipped.',
    },
    mark_read_on_dispatch: {
      type: 'boolean',
      default: MAIL_DEFAULTS.mark_read_on_dispatch,
      description:
        'Mark the message read once its delivery was committed (Gmail: remove the UNREAD label; IMAP: set \\Seen).',
    },
  },
});

/** Config of a `mail` job, defaults filled in: what `mailConfigSchema` accepts. */
export type MailConfig = FromSchema<typeof mailConfigSchema>;

/** Checks beyond the schema: regexes, extract names, require_fields, allowlist entries, template. */
export function mailConfigProblems(config: MailConfig): string[] {
  const extract = config.extract ?? {};
  const out = extractProblems(extract, MAIL_PLACEHOLDERS);
  for (const f of config.require_fields ?? [])
    if (!Object.hasOwn(extract, f)) out.push(`require_fields names "${f}", which is not an extract name`);
  for (const p of config.sender_allowlist ?? [])
    if (!normalizeAllowlistPattern(p))
      out.push(`sender_allowlist entry "${p}" is neither an address (a@b.com) nor a domain (b.com)`);
  if (typeof config.message_template === 'string')
    out.push(...validateTemplate(config.message_template, [...MAIL_PLACEHOLDERS, ...Object.keys(extract)]));
  return out;
}
