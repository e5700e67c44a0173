/** @agent/poller-kind-mail — the `mail` poller kind (mailbox search, extraction, mark-read) and `mail_count_unread`. */
export { mailAccountSchema } from './account.js';
export { mailPollerKind } from './kind.js';
export { mailConfigSchema, type MailConfig } from './config.js';
/** The legacy `plugins/mail-poller.yaml` translation, for the poller runtime's legacy hook (the daemon). */
export { mailLegacyJobSource } from './legacy.js';
