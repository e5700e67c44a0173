/**
 * @agent/cluster — cluster mode: `cluster.yaml`, membership heartbeats with a local trust window, a leader
 * term, the versioned config bundle, and the cluster's status and series, over PostgreSQL (`@agent/pg`).
 */
// The config-reading part is also `@agent/cluster/config` (no PostgreSQL client): one list of it, there.
export * from './config.js';
export {
  CLUSTER_ERROR_CODES,
  CLUSTER_FILE_CODES,
  ClusterError,
  type ClusterErrorCode,
  type ClusterErrorInfo,
} from './errors.js';
export { migrateCluster } from './migrations.js';
export { holderIdOf, type Member } from './members.js';
export {
  createMembership,
  type Membership,
  type MembershipOptions,
  type StaleMembers,
} from './membership.js';
export {
  createLeaderElection,
  readLeader,
  type LeaderElection,
  type LeaderInfo,
  type LeaderOptions,
} from './leader.js';
export {
  bundleHash,
  desiredVersion,
  loadBundle,
  pushBundle,
  type Bundle,
  type PushResult,
} from './bundle.js';
export { collectBundleFiles, HOST_LOCAL_FILES, isClusterWideFile } from './bundle-files.js';
export { materializeBundle, type MaterializeOptions } from './materialize.js';
export {
  clusterStatus,
  type ChannelOwner,
  type ClusterStatus,
  type ClusterStatusOptions,
  type MemberStatus,
} from './status.js';
export { createClusterMetrics, type ClusterMetrics } from './metrics.js';
export { repeat, type Repeater } from './loop.js';
