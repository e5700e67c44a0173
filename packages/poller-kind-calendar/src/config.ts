/** The `calendar` job config: JSON Schema and defaults. */
import { baseConfigProperties, withBaseConfig } from '@agent/poller-core';
import type { FromSchema } from 'json-schema-to-ts';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

/** Placeholders an event provides. */
export const CALENDAR_PLACEHOLDERS = [
  'summary',
  'start',
  'end',
  'html_link',
  'status',
  'id',
  'location',
  'updated',
  'change',
  'next',
] as const;

const CALENDAR_DEFAULTS = {
  calendar_id: 'primary',
  skip_cancelled: true,
  single_events: false,
  max_per_tick: 50,
  dispatch_delay_ms: 0,
} as const;

export const calendarConfigSchema = withBaseConfig({
  additionalProperties: false,
  properties: {
    calendar_id: {
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      default: CALENDAR_DEFAULTS.calendar_id,
      description: 'Calendar to follow: `primary` (the account owner) or a calendar id (an address).',
    },
    skip_cancelled: {
      type: 'boolean',
      default: CALENDAR_DEFAULTS.skip_cancelled,
      description: 'Do not deliver cancelled or deleted events.',
    },
    single_events: {
      type: 'boolean',
      default: CALENDAR_DEFAULTS.single_events,
      description:
        'Expand recurring events into instances (one item per changed instance). Default: one item per series.',
    },
    max_per_tick: { ...baseConfigProperties.max_per_tick, default: CALENDAR_DEFAULTS.max_per_tick },
    dispatch_delay_ms: {
      ...baseConfigProperties.dispatch_delay_ms,
      default: CALENDAR_DEFAULTS.dispatch_delay_ms,
    },
  },
});

/** Config of a `calendar` job, defaults filled in: what `calendarConfigSchema` accepts. */
export type CalendarConfig = FromSchema<typeof calendarConfigSchema>;
