/** The poller kinds that ship with the daemon. Loaded only where they are needed (see `kinds.ts`). */
import { calendarPollerKind } from '@agent/poller-kind-calendar';
import { mailPollerKind } from '@agent/poller-kind-mail';
import { rssPollerKind } from '@agent/poller-kind-rss';
import { webhookPollerKind } from '@agent/poller-kind-webhook';

export const builtinKinds: readonly unknown[] = [
  mailPollerKind,
  rssPollerKind,
  webhookPollerKind,
  calendarPollerKind,
];
