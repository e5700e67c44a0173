/**
 * `plugins/<name>.yaml` files that hold provider accounts (`accounts:`), by plugin name. Read from the kinds'
 * light `./schema` entries: loading the config never loads a kind.
 */
import { calendarAccountSchema } from '@agent/poller-kind-calendar/schema';
import { mailAccountSchema } from '@agent/poller-kind-mail/schema';

export const accountSchemas: Readonly<Record<string, object>> = {
  mail: mailAccountSchema,
  calendar: calendarAccountSchema,
};
