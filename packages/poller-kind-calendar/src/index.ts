/** @agent/poller-kind-calendar — the `calendar` poller kind: calendar events by incremental sync tokens. */
export { calendarAccountSchema } from './account.js';
export { calendarPollerKind, type CalendarCursor } from './kind.js';
export { calendarConfigSchema, type CalendarConfig } from './config.js';
