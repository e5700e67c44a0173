/**
 * One reload pipeline for every trigger (CLI over the broker, file watcher, admin): read, resolve, validate
 * each agent, diff, swap, then let the subsystems build their new pieces. One reload runs at a time; triggers
 * that arrive meanwhile coalesce into one more run.
 */
import {
  formatIssue,
  type ConfigSnapshot,
  type LoadOptions,
  type LoadResult,
  type QuietReadOptions,
  type SnapshotStore,
} from '@agent/config-snapshot';
import type { Logger } from '@agent/log';
import type { ReloadAck } from '@agent/cli';
import type { ConfigMetrics } from './config-metrics.js';
import type { DaemonErrorCode } from './errors.js';
import { fileErrors, makeAck, rejectedTotal, type ApplyReports } from './reload-ack.js';
import type { ReloadHistory } from './reload-history.js';
import { previewOnce } from './reload-preview.js';
import { readNext } from './reload-read.js';

export interface ReloadRequest {
  /** `cluster`: the daemon saw a newer desired config bundle at a heartbeat. */
  source: 'cli' | 'watcher' | 'admin' | 'signal' | 'cluster';
  requestId?: string;
  /**
   * The watcher skips saves that changed nothing. An explicit reload always answers: with nothing changed on
   * disk, with the running version.
   */
  skipIfUnchanged?: boolean;
}

export interface ReloadOutcome {
  ack: ReloadAck;
  /** Nothing on disk changed and the trigger asked to skip such reloads. */
  skipped: boolean;
  /** Nothing on disk changed: no new version, nothing applied; the ack names the running version. */
  unchanged: boolean;
  result: LoadResult | null;
  /** The subsystems' reports of this reload (empty when nothing was applied). */
  reports: ApplyReports;
}

/** Where a reload reads when not the config directory itself (cluster mode: the desired bundle). */
export interface ReloadSource {
  dir: string;
  /** The version the new snapshot gets (the bundle's). */
  version: number;
}

export interface ReloadPipelineDeps {
  configDir: string;
  /**
   * Cluster mode: the directory to read and its version, written whole before it is handed over (so no
   * wait for a save in progress). Absent: `configDir`, read once its files are quiet.
   */
  source?(): Promise<ReloadSource>;
  /** Fields every ack carries besides the reload's own (cluster mode: which daemon, which bundle). */
  ackIdentity?(): Record<string, unknown>;
  loadOptions: Omit<LoadOptions, 'previous'>;
  store: SnapshotStore;
  logger: Logger;
  metrics: ConfigMetrics;
  /** Runs after the swap: subsystems pick up the new snapshot and report. Errors are logged, never thrown. */
  apply(next: ConfigSnapshot, prev: ConfigSnapshot, result: LoadResult): Promise<ApplyReports | void>;
  /** When nothing changed: what the subsystems report of the running snapshot, without applying anything. */
  status?(current: ConfigSnapshot, result: LoadResult): Promise<ApplyReports | void>;
  /** A dry run: what the subsystems would make of `next` (the running snapshot when nothing changed). */
  preview?(next: ConfigSnapshot, prev: ConfigSnapshot, result: LoadResult): Promise<ApplyReports | void>;
  /** How a reload waits for a save in progress (`loadConfigWhenQuiet`); defaults otherwise. */
  quiet?: QuietReadOptions;
  /** Where each applied version is recorded, with its triggers. */
  history?: ReloadHistory;
  /** After every read, applied or not: the secret files to watch (a rejected one may be fixed next). */
  watchFiles?(files: readonly string[]): void;
  now?: () => number;
}

export interface ReloadPipeline {
  reload(req: ReloadRequest): Promise<ReloadOutcome>;
  /**
   * A dry run: the same read, validation and planning as `reload`, then stop. Nothing is swapped, applied,
   * logged as applied or counted; the ack has `dry_run: true` and the version the reload would run on.
   * It waits for a running reload and runs alone, so it plans against what runs.
   */
  preview(req: Omit<ReloadRequest, 'skipIfUnchanged'>): Promise<ReloadOutcome>;
  /** Resolves when no reload is running or queued. */
  idle(): Promise<void>;
}

interface Batch {
  requests: ReloadRequest[];
  waiters: { req: ReloadRequest; resolve: (o: ReloadOutcome) => void }[];
}

export function createReloadPipeline(deps: ReloadPipelineDeps): ReloadPipeline {
  const now = deps.now ?? (() => performance.now());
  let running: Promise<void> | null = null;
  let queued: Batch | null = null;
  // What the last read saw. A watcher trigger is skipped when nothing changed since then, not since the
  // running snapshot: after a rejected read, restoring the snapshot's bytes (or a secret's mode) is a change.
  let lastRead = deps.store.current().contentHash;

  const runBatch = async (batch: Batch): Promise<void> => {
    const t0 = now();
    const skipIfUnchanged = batch.requests.every((r) => r.skipIfUnchanged);
    let result: LoadResult | null = null;
    let reports: ApplyReports = new Map();
    let skipped = false;
    let unchanged = false;
    const prev = deps.store.current();
    try {
      // Never a save in progress: files changed less than a moment ago are waited for (the watcher's
      // debounce already did; an explicit reload may come in the middle of one).
      result = await readNext(deps, prev);
      const seen = lastRead;
      lastRead = result.contentHash;
      if (skipIfUnchanged && result.contentHash === seen) skipped = true;
      else if (result.unchanged && result.contentHash === seen) {
        // The same bytes as the last read, which built the running snapshot: answer it, apply nothing. After
        // a rejected read, restoring the running bytes differs from the last read and goes on as a change.
        unchanged = true;
        try {
          reports = (await deps.status?.(prev, result)) ?? reports;
        } catch (err) {
          deps.logger.error('reload status failed', { err: prev.redact((err as Error).message) });
        }
      } else if (result.snapshot && result.snapshot.version <= prev.version) {
        result = notNewer(result, prev, deps.configDir);
      } else if (result.snapshot) {
        deps.store.swap(result.snapshot);
        try {
          reports = (await deps.apply(result.snapshot, prev, result)) ?? reports;
        } catch (err) {
          deps.logger.error('reload apply failed', { err: prev.redact((err as Error).message) });
        }
      }
      if (!skipped)
        deps.watchFiles?.([...new Set([...deps.store.current().secretFiles, ...result.secretFiles])].sort());
    } catch (err) {
      deps.logger.error('reload failed', { err: (err as Error).message });
    }
    const elapsed = now() - t0;
    const current = deps.store.current();
    const ack = (req: ReloadRequest) => ({
      ...makeAck(req, result, reports, current, elapsed),
      ...deps.ackIdentity?.(),
    });
    if (!skipped) report(result, ack({ source: 'admin' }), current, elapsed, unchanged);
    if (!skipped && !unchanged && result?.snapshot)
      deps.history?.record({
        version: current.version,
        triggers: [...new Set(batch.requests.map((r) => r.source))].sort(),
        applied: result.applied.length,
        rejected: rejectedTotal(ack({ source: 'admin' })),
      });
    for (const w of batch.waiters) w.resolve({ skipped, unchanged, result, reports, ack: ack(w.req) });
  };

  const report = (
    r: LoadResult | null,
    ack: ReloadAck,
    current: ConfigSnapshot,
    elapsed: number,
    unchanged: boolean,
  ): void => {
    const log = deps.logger;
    const redact = current.redact;
    const clean = r !== null && r.snapshot !== null && rejectedTotal(ack) === 0;
    deps.metrics.setLastSuccessful(clean);
    if (!clean) deps.metrics.reloadRejected();
    if (!r) return;
    for (const e of fileErrors(r)) log.error('config issue', { issue: redact(formatIssue(e)), code: e.code });
    for (const w of r.warnings) log.warn('config issue', { issue: redact(formatIssue(w)), code: w.code });
    for (const x of r.rejected)
      log.error('agent rejected', { agent_id: x.agentId, reason: redact(x.reason) });
    for (const c of ack.restart_required)
      log.warn('restart-required field changed during reload', {
        field: c.field,
        ...(c.agent_id ? { agent_id: c.agent_id } : {}),
      });
    if (unchanged) {
      log.info('config reload found nothing changed', {
        version: current.version,
        elapsed_ms: Math.round(elapsed),
      });
    } else if (r.snapshot) {
      log.info('config reload applied', {
        version: r.snapshot.version,
        applied: r.applied,
        rejected_count: rejectedTotal(ack),
        elapsed_ms: Math.round(elapsed),
      });
      deps.metrics.reloadApplied();
      deps.metrics.setVersions(current);
    }
    deps.metrics.observeLatency(elapsed);
  };

  const busy = (): Promise<void> | null => running ?? (queued ? Promise.resolve() : null);

  const pump = (): void => {
    if (running || !queued) return;
    const batch = queued;
    queued = null;
    running = runBatch(batch).finally(() => {
      running = null;
      pump();
    });
  };

  const preview = async (req: ReloadRequest): Promise<ReloadOutcome> => {
    // Alone, like a reload: wait until nothing runs or is queued, then hold the slot (no await in between).
    while (busy()) await idle();
    let done!: () => void;
    running = new Promise<void>((r) => (done = r));
    try {
      return await previewOnce(deps, req, lastRead, now);
    } finally {
      running = null;
      done();
      pump();
    }
  };

  const idle = async (): Promise<void> => {
    for (let wait = busy(); wait; wait = busy()) await wait;
  };

  return {
    preview,
    reload(req) {
      return new Promise<ReloadOutcome>((resolve) => {
        queued ??= { requests: [], waiters: [] };
        queued.requests.push(req);
        queued.waiters.push({ req, resolve });
        pump();
      });
    },
    idle,
  };
}

/**
 * A read that cannot be applied because its version is the running one: in cluster mode the desired bundle
 * did not change, but what this host resolves from it did. Reported as an error, never as applied.
 */
function notNewer(result: LoadResult, prev: ConfigSnapshot, configDir: string): LoadResult {
  const code: DaemonErrorCode = 'DAEMON_HOST_FILES_CHANGED';
  return {
    ...result,
    snapshot: null,
    applied: [],
    errors: [
      ...result.errors,
      {
        code,
        severity: 'error',
        scope: 'global',
        file: configDir,
        path: '',
        message: `config v${prev.version} is running, and what this host resolves from it changed (a secret file, an environment variable or a host-local file); nothing was applied`,
        hint: 'change the files on every host, then run `agent config push --new-version`: every daemon applies them as the next version',
      },
    ],
  };
}
