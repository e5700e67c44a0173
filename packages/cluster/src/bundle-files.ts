/**
 * Which config files the cluster shares and which stay on each host. Cluster-wide files travel as texts
 * in the bundle; `${file:}` references in them resolve on each host against the daemon's working directory,
 * so secret values never enter the database. Host-local files are what differs per host by nature: its
 * identity and database link (`cluster.yaml`), its NATS link (`broker.yaml`), its data directory and
 * listeners (`runtime.yaml`), its memory file (`memory.yaml`), and every secret file.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterError } from './errors.js';

export const HOST_LOCAL_FILES = ['cluster.yaml', 'broker.yaml', 'runtime.yaml', 'memory.yaml'] as const;

const CLUSTER_WIDE = [
  /^llm\.yaml$/,
  /^pollers\.yaml$/,
  /^agents\.d\/[^/]+\.ya?ml$/,
  /^plugins\/[^/]+\.ya?ml$/,
] as const;

/** Whether a config-relative path (`/` separators) belongs in the bundle. */
export function isClusterWideFile(rel: string): boolean {
  return (
    !rel.split('/').some((s) => s === '..' || s === '' || s.startsWith('.')) &&
    CLUSTER_WIDE.some((re) => re.test(rel))
  );
}

export function assertClusterWideFiles(files: Readonly<Record<string, string>>): void {
  for (const rel of Object.keys(files)) {
    if (!isClusterWideFile(rel))
      throw new ClusterError(
        'CLUSTER_BUNDLE_BAD_PATH',
        `${JSON.stringify(rel)} is not a cluster-wide config file (agents.d/*.yaml, llm.yaml, pollers.yaml, plugins/*.yaml)`,
      );
  }
}

/** The cluster-wide files of a config directory, as texts by config-relative path (what `push` sends). */
export function collectBundleFiles(configDir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const add = (rel: string): void => {
    const abs = join(configDir, rel);
    if (isClusterWideFile(rel) && statSync(abs).isFile()) files[rel] = readFileSync(abs, 'utf8');
  };
  for (const rel of ['llm.yaml', 'pollers.yaml']) if (existsSync(join(configDir, rel))) add(rel);
  for (const dir of ['agents.d', 'plugins']) {
    if (!existsSync(join(configDir, dir))) continue;
    for (const name of readdirSync(join(configDir, dir)).sort()) add(`${dir}/${name}`);
  }
  return files;
}
