/**
 * @agent/poller-kind-mail/schema — what a host needs to read the mail plugin's config files without loading
 * the kind: the account schema of `plugins/mail.yaml` and the legacy `plugins/mail-poller.yaml` translation.
 */
export { mailAccountSchema } from './account.js';
export { mailLegacyJobSource } from './legacy.js';
