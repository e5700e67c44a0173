/** @agent/poller-kind-webhook — the `webhook_poll` poller kind: generic JSON GET / POST endpoints. */
export { webhookConfigSchema, webhookPollerKind, type WebhookConfig } from './kind.js';
