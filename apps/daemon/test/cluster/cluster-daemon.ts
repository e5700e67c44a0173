// One daemon of the fault run as the nemesis sees it (`DaemonHandle`): its work directory with the host-local
// files, a fault proxy on each of its links, and its process across restarts (SIGTERM, then a new start,
// under a skewed clock when asked). Its log lines of every incarnation are kept for the history.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { sleep } from '@agent/timers';
import { hostFiles, type ClusterTiming, type Link } from './cluster-files.js';
import { DaemonStartError, spawnDaemon, type RunningDaemon } from './daemon-proc.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';
import type { RawLogLine } from './history.js';
import type { DaemonHandle } from './nemesis-run.js';
import { killAndWait, onExitKill } from './process-tools.js';

export interface ClusterDaemon extends DaemonHandle {
  readonly dbProxy: FaultProxy;
  readonly natsProxy: FaultProxy;
  /** Every line of every incarnation, with when the harness read it. */
  readonly lines: RawLogLine[];
  /** The metrics endpoint of the running incarnation. */
  readonly metricsUrl: string;
  start(options?: { skewSecs?: number }): Promise<void>;
  /** SIGKILLs the process, closes the proxies, removes the work directory. */
  close(): Promise<void>;
}

export interface ClusterDaemonOptions {
  id: string;
  pg: Link;
  nats: Link;
  schema: string;
  timing: ClusterTiming;
  /** How long a start refused with CLUSTER_DUPLICATE_ID is retried (the previous incarnation's window). */
  rejoinWithinMs?: number;
}

const via = (p: FaultProxy): Link => ({ host: p.host, port: p.port });
const noop = (): void => {};

function writeFiles(root: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    const p = join(root, 'config', rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
}

export async function createClusterDaemon(o: ClusterDaemonOptions): Promise<ClusterDaemon> {
  const dbProxy = await startFaultProxy({ target: o.pg });
  const natsProxy = await startFaultProxy({ target: o.nats });
  const root = mkdtempSync(join(tmpdir(), `agent-fault-${o.id}-`));
  writeFiles(root, hostFiles(o.id, { pg: via(dbProxy), nats: via(natsProxy) }, o.schema, o.timing));
  const lines: RawLogLine[] = [];
  let running: RunningDaemon | undefined;
  let disarm = noop;

  /**
   * A SIGKILLed incarnation stays live in the membership table until its window passes; a start before
   * that is refused with CLUSTER_DUPLICATE_ID, as an operator's restart would be. It is retried.
   */
  const start = async (options: { skewSecs?: number } = {}): Promise<void> => {
    const until = Date.now() + (o.rejoinWithinMs ?? o.timing.staleAfterSecs * 1000 + 10_000);
    for (;;) {
      try {
        running = await spawnDaemon({ cwd: root, lines, ...options });
        disarm = onExitKill(running.pid, 'SIGKILL');
        return;
      } catch (err) {
        const refused = err instanceof DaemonStartError && err.output.includes('CLUSTER_DUPLICATE_ID');
        if (!refused || Date.now() > until) throw err;
        await sleep(250);
      }
    }
  };
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (!running) return;
    disarm();
    await killAndWait(running.pid, signal, 20_000);
  };

  return {
    id: o.id,
    get pid() {
      return running?.pid ?? 0;
    },
    get metricsUrl() {
      return running?.metricsUrl ?? '';
    },
    dbProxy,
    natsProxy,
    lines,
    start,
    async restart(options = {}) {
      await stop('SIGTERM');
      await start(options);
    },
    async close() {
      await stop('SIGKILL');
      await dbProxy.close();
      await natsProxy.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
