/** The poller kinds that ship with the daemon, and the account schemas of their provider plugins. */
import { calendarAccountSchema, calendarPollerKind } from '@agent/poller-kind-calendar';
import { mailAccountSchema, mailPollerKind } from '@agent/poller-kind-mail';
import { rssPollerKind } from '@agent/poller-kind-rss';
import { webhookPollerKind } from '@agent/poller-kind-webhook';

export const builtinKinds: readonly unknown[] = [
  mailPollerKind,
  rssPollerKind,
  webhookPollerKind,
  calendarPollerKind,
];

/** `plugins/<name>.yaml` files that hold provider accounts (`accounts:`), by plugin name. */
export const accountSchemas: Readonly<Record<string, object>> = {
  mail: mailAccountSchema,
  calendar: calendarAccountSchema,
};
