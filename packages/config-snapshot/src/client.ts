/** `@agent/config-snapshot/client`: the light entry for client processes (the CLI). */
export { loadClientConfig, type ClientConfig } from './client-config.js';
export { formatIssue, type ConfigIssue } from './issues.js';
