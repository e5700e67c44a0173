/**
 * @agent/cluster/config — what reading a config directory needs of cluster mode (`cluster.yaml`), without
 * the PostgreSQL client: a single-host daemon loads this and never `pg`.
 */
export { clusterFileSchema, type ClusterFile } from './schema.js';
export {
  CLUSTER_FILE,
  CLUSTER_SECTION,
  clusterBrokerIssues,
  clusterOf,
  clusterSectionReader,
  clusterSettingsChanged,
  type ClusterSettings,
} from './section.js';
