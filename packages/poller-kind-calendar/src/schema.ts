/**
 * @agent/poller-kind-calendar/schema — what a host needs to read `plugins/calendar.yaml` without loading the
 * kind: the account schema.
 */
export { calendarAccountSchema } from './account.js';
