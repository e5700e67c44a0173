/** What a reload and a preview read: the desired bundle in cluster mode, else the config directory once quiet. */
import {
  loadConfig,
  loadConfigWhenQuiet,
  type ConfigSnapshot,
  type LoadResult,
} from '@agent/config-snapshot';
import type { ReloadPipelineDeps } from './reload.js';

export async function readNext(deps: ReloadPipelineDeps, prev: ConfigSnapshot): Promise<LoadResult> {
  const from = await deps.source?.();
  // A bundle directory is written whole before it is handed over: no save in progress to wait for.
  if (from) return loadConfig(from.dir, { ...deps.loadOptions, previous: prev, version: from.version });
  return loadConfigWhenQuiet(deps.configDir, { ...deps.loadOptions, ...deps.quiet, previous: prev });
}
