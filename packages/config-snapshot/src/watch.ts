/**
 * Watches the config directory and every `${file:}` secret, and calls `onChange` once a burst of saves
 * is over: `debounceMs` after the last event, but at most `maxWaitMs` after the first one. Editors that save
 * by rename (vim, VS Code) and files created after start are covered because whole directories are watched.
 */
import { dirname, resolve } from 'node:path';
import { setTimer, type TimerHandle } from '@agent/timers';
import { watch, type FSWatcher } from 'chokidar';

export interface ConfigWatcherOptions {
  dir: string;
  /** Secret files outside (or inside) the config dir. */
  files?: readonly string[];
  debounceMs?: number;
  maxWaitMs?: number;
  /** Called with the paths that changed since the last call. */
  onChange(paths: string[]): void;
  onError?(err: unknown): void;
}

export interface ConfigWatcher {
  /** Replaces the set of extra files (after a reload found new secrets). */
  setFiles(files: readonly string[]): void;
  /** Resolves once the initial scan is done and events will be seen. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

// Secrets are watched through their directories, so that a secret replaced by rename is still seen.
function dirsOf(files: Iterable<string>): string[] {
  return [...new Set([...files].map((f) => dirname(f)))];
}

export function watchConfig(opts: ConfigWatcherOptions): ConfigWatcher {
  const debounceMs = opts.debounceMs ?? 500;
  const maxWaitMs = opts.maxWaitMs ?? 5000;
  const dir = resolve(opts.dir);
  let files = new Set((opts.files ?? []).map((f) => resolve(f)));
  let pending = new Set<string>();
  let quiet: TimerHandle | undefined;
  let cap: TimerHandle | undefined;
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

  const relevant = (path: string): boolean => {
    const p = resolve(path);
    return p === dir || p.startsWith(dir + '/') || files.has(p);
  };

  const onEvent = (path: string): void => {
    if (closed || !relevant(path)) return;
    pending.add(resolve(path));
    quiet?.cancel();
    quiet = setTimer(fire, debounceMs);
    cap ??= setTimer(fire, maxWaitMs);
  };

  const watcher: FSWatcher = watch([dir, ...dirsOf(files)], {
    ignoreInitial: true,
    depth: 3,
    atomic: true,
    ignored: (p: string) => /(^|\/)(\.git|node_modules)(\/|$)|\.sw[px]$|~$/.test(p),
  });
  const ready = new Promise<void>((res) => watcher.once('ready', () => res()));
  for (const ev of ['add', 'change', 'unlink', 'addDir', 'unlinkDir'] as const) watcher.on(ev, onEvent);
  watcher.on('error', (err) => opts.onError?.(err));

  return {
    setFiles(next) {
      const nextSet = new Set(next.map((f) => resolve(f)));
      const added = dirsOf(nextSet).filter((d) => !dirsOf(files).includes(d));
      files = nextSet;
      if (added.length) watcher.add(added);
    },
    ready: () => ready,
    async close() {
      closed = true;
      quiet?.cancel();
      cap?.cancel();
      await watcher.close();
    },
  };
}
