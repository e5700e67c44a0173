/** @agent/poller-kind-calendar — the `calendar` poller kind: calendar events by incremental sync tokens. */
export {
  CALENDAR_API_BASE_URL,
  calendarAccountSchema,
  calendarPollerKind,
  createCalendarShared,
  eventsParams,
  MAX_PAGES_PER_SYNC,
  type CalendarCursor,
  type CalendarShared,
} from './kind.js';
export {
  CALENDAR_DEFAULTS,
  CALENDAR_PLACEHOLDERS,
  calendarConfigSchema,
  type CalendarConfig,
} from './config.js';
export {
  createCalendarApi,
  EVENTS_PAGE_SIZE,
  toPollerError,
  type CalendarApi,
  type EventsPage,
} from './api.js';
export {
  changeOf,
  eventFields,
  formatEventTime,
  itemIdOf,
  type CalendarEvent,
  type EventTime,
} from './render.js';
