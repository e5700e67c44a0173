/**
 * Watches the config directory and every `${file:}` secret, and calls `onChange` once a burst of saves
 * is over: `debounceMs` after the last event, but at most `maxWaitMs` after the first one. Editors that save
 * by rename (vim, VS Code) and files created after start are covered because the whole directory is watched.
 *
 * Secret files are followed by path with a stat poll (`pollMs`, 1 s), not through chokidar:
 * - chokidar drops a mode-only change (chmod) of a file that was read since its last write: it takes an
 *   event whose mtime did not move for an access-time update unless atime <= mtime, and the loader has
 *   just read the secret. `alwaysStat`, `awaitWriteFinish` and `atomic` do not change that.
 * - a secret may be missing, in a directory that does not exist yet, outside the config dir (watching its
 *   directory would watch unrelated trees), or a link: `stat` of the exact path sees creation, deletion,
 *   content, mode, rename-over (new inode) and a changed link target alike.
 * Secrets are few, so a handful of `stat` calls a second is cheap.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { setTimer, type TimerHandle } from '@agent/timers';
import { watch, type FSWatcher } from 'chokidar';

export interface ConfigWatcherOptions {
  dir: string;
  /** Secret files outside (or inside) the config dir, existing or not. */
  files?: readonly string[];
  /**
   * Files or directories whose changes never matter, e.g. the daemon's data directory when it lies inside
   * the config dir: its databases change on every tick and would keep the watcher rescanning.
   */
  ignore?: readonly string[];
  debounceMs?: number;
  maxWaitMs?: number;
  /** How often secret files are checked. */
  pollMs?: number;
  /** Called with the paths that changed since the last call. */
  onChange(paths: string[]): void;
  onError?(err: unknown): void;
}

export interface ConfigWatcher {
  /** Replaces the set of secret files (after a read named other ones). */
  setFiles(files: readonly string[]): void;
  /** Resolves once the initial scan is done and events will be seen. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** What a change to a secret file alters: inode, mode, size, times; or why it cannot be stat-ed. */
async function signature(path: string): Promise<string> {
  try {
    const s = await stat(path);
    return `${s.dev}:${s.ino}:${s.mode}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch (err) {
    return `absent:${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
}

const EDITOR_AND_TOOL_FILES = /(^|\/)(\.git|node_modules)(\/|$)|\.sw[px]$|~$/;
const SQLITE_FILES = /\.(db|sqlite|sqlite3)(-wal|-shm|-journal)?$/;
const CONFIG_FILE = /\.ya?ml$/;

export function watchConfig(opts: ConfigWatcherOptions): ConfigWatcher {
  const debounceMs = opts.debounceMs ?? 500;
  const maxWaitMs = opts.maxWaitMs ?? 5000;
  const pollMs = opts.pollMs ?? 1000;
  const dir = resolve(opts.dir);
  let files = new Set((opts.files ?? []).map((f) => resolve(f)));
  /** Last signature seen per secret file; a file without one gets its baseline on the next check. */
  const seen = new Map<string, string>();
  let pending = new Set<string>();
  let quiet: TimerHandle | undefined;
  let cap: TimerHandle | undefined;
  let poll: TimerHandle | undefined;
  let closed = false;

  const fire = (): void => {
    quiet?.cancel();
    cap?.cancel();
    quiet = cap = undefined;
    if (closed || pending.size === 0) return;
    const paths = [...pending].sort();
    pending = new Set();
    try {
      opts.onChange(paths);
    } catch (err) {
      opts.onError?.(err);
    }
  };

  const changed = (p: string): void => {
    if (closed) return;
    pending.add(p);
    quiet?.cancel();
    quiet = setTimer(fire, debounceMs);
    cap ??= setTimer(fire, maxWaitMs);
  };

  const onEvent = (path: string): void => {
    const p = resolve(path);
    if (p === dir || p.startsWith(dir + '/')) changed(p);
  };
  // Config files are YAML; a secret is named by its path. A note, a log or an export written beside them
  // never reloads: every reload reads the whole directory (megabytes with thousands of jobs).
  const onFileEvent = (path: string): void => {
    if (CONFIG_FILE.test(path) || files.has(resolve(path))) onEvent(path);
  };

  const check = async (): Promise<void> => {
    for (const p of files) {
      const sig = await signature(p);
      if (closed) return;
      if (!files.has(p)) continue; // dropped by setFiles meanwhile
      const was = seen.get(p);
      seen.set(p, sig);
      if (was !== undefined && was !== sig) changed(p);
    }
  };

  // Baselines for paths added by setFiles, taken now rather than at the next check so that a change made
  // in between is not mistaken for the baseline.
  const baseline = async (paths: string[]): Promise<void> => {
    for (const p of paths) {
      const sig = await signature(p);
      if (!closed && files.has(p) && !seen.has(p)) seen.set(p, sig);
    }
  };

  const schedule = (): void => {
    if (closed) return;
    poll = setTimer(() => {
      check()
        .catch((err: unknown) => opts.onError?.(err))
        .finally(schedule);
    }, pollMs);
  };

  // A path that is the config dir or holds it (a data dir of `.`) is not ignored: the watcher would see nothing.
  const ignoredPaths = (opts.ignore ?? [])
    .map((p) => resolve(p))
    .filter((p) => p !== dir && !dir.startsWith(p + '/'));
  const watcher: FSWatcher = watch(dir, {
    ignoreInitial: true,
    depth: 3,
    atomic: true,
    ignored: (path: string) => {
      if (EDITOR_AND_TOOL_FILES.test(path)) return true;
      const p = resolve(path);
      if (ignoredPaths.some((i) => p === i || p.startsWith(i + '/'))) return true;
      // SQLite files (a state database kept next to the config) are never config, unless named as a secret.
      return SQLITE_FILES.test(p) && !files.has(p);
    },
  });
  const scanned = new Promise<void>((res) => watcher.once('ready', () => res()));
  for (const ev of ['add', 'change', 'unlink'] as const) watcher.on(ev, onFileEvent);
  // A directory moved in brings its files as `add` events; one removed may take config with it.
  watcher.on('unlinkDir', onEvent);
  watcher.on('error', (err) => opts.onError?.(err));
  const ready = Promise.all([scanned, check().catch((err: unknown) => opts.onError?.(err))]).then(schedule);

  return {
    setFiles(next) {
      files = new Set(next.map((f) => resolve(f)));
      for (const p of seen.keys()) if (!files.has(p)) seen.delete(p);
      void baseline([...files].filter((p) => !seen.has(p)));
    },
    ready: () => ready,
    async close() {
      closed = true;
      quiet?.cancel();
      cap?.cancel();
      poll?.cancel();
      await watcher.close();
    },
  };
}
