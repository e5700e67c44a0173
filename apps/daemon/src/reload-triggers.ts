/**
 * What starts a reload besides the admin API: the broker subscriber (`agent reload`) and the file watcher.
 * Both follow `runtime.reload.enabled` of the running snapshot; in cluster mode the files are the bundle's,
 * so there is no watcher (`agent config push --watch` on one host replaces it).
 */
import type { Broker } from '@agent/broker';
import { RELOAD_ACK_SUBJECT, RELOAD_SUBJECT } from '@agent/cli/subjects';
import { watchConfig, type ConfigSnapshot, type ConfigWatcher } from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import type { ReloadPipeline } from './reload.js';

export interface ReloadTriggerDeps {
  broker: Broker;
  /** The pipeline, read when a trigger fires (it is built after the triggers' owner wires them). */
  reloads: () => ReloadPipeline;
  configDir: string;
  /** The daemon's data directory: its files change all the time and must not look like edits. */
  dataDir: string;
  logger: Logger;
  /** Cluster mode: no file watcher. */
  clustered: boolean;
}

export interface ReloadTriggers {
  /** Turns the triggers on or off as `snap.runtime.reload.enabled` says. */
  follow(snap: ConfigSnapshot): Promise<void>;
  /** The secret files the watcher follows (after a read named other ones). */
  watchFiles(files: readonly string[]): void;
  close(): Promise<void>;
}

export function createReloadTriggers(deps: ReloadTriggerDeps): ReloadTriggers {
  const { broker, logger } = deps;
  let subscription: { unsubscribe(): void } | undefined;
  let watcher: ConfigWatcher | undefined;

  const subscribe = async () => {
    subscription = broker.subscribe(RELOAD_SUBJECT, async (msg) => {
      const req = (msg.data ?? {}) as { request_id?: unknown; dry_run?: unknown };
      const requestId = typeof req.request_id === 'string' ? req.request_id : '';
      const outcome =
        req.dry_run === true
          ? await deps.reloads().preview({ source: 'cli', requestId })
          : await deps.reloads().reload({ source: 'cli', requestId });
      await broker.publish(RELOAD_ACK_SUBJECT, outcome.ack);
      if (msg.reply) await broker.publish(msg.reply, outcome.ack);
    });
    await broker.flush();
  };

  const watch = async (snap: ConfigSnapshot) => {
    watcher = watchConfig({
      dir: deps.configDir,
      files: snap.secretFiles,
      ignore: [deps.dataDir],
      debounceMs: snap.runtime.reload.debounce_ms,
      maxWaitMs: snap.runtime.reload.max_wait_ms,
      onChange: (paths) => {
        logger.debug('config files changed', { paths });
        void deps.reloads().reload({ source: 'watcher', skipIfUnchanged: true });
      },
      onError: (err) => logger.warn('config watcher error', { err: (err as Error).message }),
    });
    await watcher.ready();
  };

  return {
    async follow(snap) {
      const on = snap.runtime.reload.enabled;
      if (on && !subscription) await subscribe();
      else if (!on && subscription) {
        subscription.unsubscribe();
        subscription = undefined;
      }
      if (on && !watcher && !deps.clustered) await watch(snap);
      else if (!on && watcher) {
        const w = watcher;
        watcher = undefined;
        await w.close();
      }
    },
    watchFiles: (files) => watcher?.setFiles(files),
    async close() {
      subscription?.unsubscribe();
      await watcher?.close();
    },
  };
}
