/**
 * `agent config push [--watch] [--new-version]`: checks the config directory with the `--check-config` path and stores its
 * cluster-wide files as the next config bundle in PostgreSQL. Every daemon of the cluster applies it at its
 * next heartbeat; `agent reload` applies it at once and reports every daemon. `--watch` pushes again after
 * each save (the file watcher of single-host mode is off in cluster mode).
 */
import { hostname, userInfo } from 'node:os';
import { collectBundleFiles, clusterOf, migrateCluster, pushBundle } from '@agent/cluster';
import type { CliIO } from '@agent/cli';
import { formatIssue, loadConfig, watchConfig } from '@agent/config-snapshot';
import { createPool } from '@agent/pg';
import { checkConfig } from './check-config.js';
import { loadOptionsFor } from './daemon.js';

export interface PushArgs {
  configDir: string;
  watch: boolean;
  /** A new version even when the texts are the desired ones (secret or host-local files changed). */
  newVersion?: boolean;
}

/** Resolves with the exit code: 0 pushed (or unchanged), 1 refused or failed. With `--watch`, on a signal. */
export async function runConfigPush(io: CliIO, args: PushArgs): Promise<number> {
  const local = loadConfig(args.configDir, loadOptionsFor({ cwd: io.cwd, env: io.env }));
  const settings = local.snapshot ? clusterOf(local.snapshot) : null;
  if (!settings) {
    for (const e of local.errors) io.err(formatIssue(e));
    io.err(
      `agent config push: ${args.configDir}/cluster.yaml is missing, invalid or says enabled: false; push works in cluster mode only`,
    );
    return 1;
  }
  const pool = createPool({
    url: settings.postgres.url,
    applicationName: 'agent config push',
    max: 1,
    onIdleError: () => {},
  });
  const by = `${userInfo().username}@${hostname()}`;
  const pushOnce = async (): Promise<number> => {
    const check = await checkConfig(args.configDir, { cwd: io.cwd, env: io.env });
    if (check.exitCode !== 0) {
      for (const l of [...check.stderr, ...check.stdout]) io.err(l);
      io.err('agent config push: the check failed; nothing was pushed');
      return 1;
    }
    const files = collectBundleFiles(args.configDir);
    const pushed = await pushBundle(pool, settings.postgres.schema, files, by, {
      newVersion: args.newVersion === true,
    });
    io.out(
      pushed.created
        ? `config v${pushed.version} pushed (${Object.keys(files).length} files, hash ${pushed.hash.slice(0, 12)}); daemons apply it at their next heartbeat, or run agent reload`
        : `config v${pushed.version} unchanged (hash ${pushed.hash.slice(0, 12)})`,
    );
    return 0;
  };
  try {
    await migrateCluster(pool, settings.postgres.schema);
    const code = await pushOnce();
    if (!args.watch) return code;
    return await watchAndPush(io, args.configDir, pushOnce);
  } catch (err) {
    io.err(`agent config push: ${(err as Error).message}`);
    return 1;
  } finally {
    await pool.end().catch(() => {});
  }
}

/** Pushes after each quiet save until SIGINT or SIGTERM; failures are printed and the watch goes on. */
async function watchAndPush(io: CliIO, dir: string, pushOnce: () => Promise<number>): Promise<number> {
  let chain = Promise.resolve();
  const watcher = watchConfig({
    dir,
    onChange: () => {
      chain = chain.then(() => pushOnce().then(() => undefined)).catch((err: Error) => io.err(err.message));
    },
    onError: (err) => io.err(`agent config push --watch: ${(err as Error).message}`),
  });
  await watcher.ready();
  io.out(`watching ${dir}; every save is checked and pushed (Ctrl-C stops)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await watcher.close();
  await chain;
  return 0;
}
