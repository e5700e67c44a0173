export {
  cliCommands,
  keepRunningOnClosedStdout,
  plainLineRequest,
  processIO,
  runClient,
  type ClientRequest,
  type ClientRunner,
  type CliIO,
} from './commands.js';
export {
  formatReloadAck,
  NO_ACK_MESSAGE,
  NO_RESPONDER_MESSAGE,
  NOT_REACHABLE_MESSAGE,
  RELOAD_ACK_TIMEOUT_MS,
  reloadExitCode,
  rejectedCount,
  runReload,
  type ReloadAck,
} from './reload.js';
export { reloadCommand } from './reload-command.js';
export {
  exitCodesEpilogue,
  POLLERS_ACTIONS,
  POLLERS_EXIT_CODES,
  pollersCommand,
  type ExitCodes,
  type PollersAction,
} from './pollers-command.js';
export { runPollers, RESET_NEEDS_YES, type PollersArgs } from './pollers.js';
export {
  adminRequest,
  ADMIN_URL_ENV,
  CLI_ERROR_CODES,
  CliError,
  closeAdminClient,
  CONNECT_TIMEOUT_MS,
  daemonDownMessage,
  listenToUrl,
  readTokenFile,
  REQUEST_TIMEOUT_MS,
  resolveAdminTarget,
  RUN_TIMEOUT_MS,
  type AdminTarget,
  type CliErrorCode,
  type CliErrorInfo,
} from './admin-client.js';
export {
  clusterReloadReport,
  type ClusterMembersAnswer,
  type ClusterReloadAck,
  type ClusterReloadInput,
  type ClusterReloadReport,
} from './cluster-reload.js';
export { formatClusterStatus, type ClusterStatusView } from './cluster-status.js';
export { daemonBrokerConfig, fetchDaemonInfo, INFO_TIMEOUT_MS } from './daemon-info.js';
export {
  alignTable,
  formatJobDetail,
  formatJobTable,
  formatReloadPlan,
  formatRunResult,
  formatTime,
  formatValue,
} from './format.js';
export { CLUSTER_MEMBERS_SUBJECT, RELOAD_ACK_SUBJECT, RELOAD_SUBJECT } from './subjects.js';
