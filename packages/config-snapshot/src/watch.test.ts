import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempConfig, type TempDir } from './testing.js';
import { watchConfig, type ConfigWatcher } from './watch.js';

let dirs: TempDir[] = [];
let watchers: ConfigWatcher[] = [];
afterEach(async () => {
  for (const w of watchers) await w.close();
  for (const d of dirs) d.cleanup();
  dirs = [];
  watchers = [];
});

function setup(debounceMs = 100, maxWaitMs = 1000) {
  const d = tempConfig({ 'llm.yaml': 'providers: {}\n', 'agents.d/a.yaml': 'x: 1\n' });
  dirs.push(d);
  const calls: { at: number; paths: string[] }[] = [];
  const secret = d.write('../secrets/k.key', 'v1', 0o600);
  const w = watchConfig({
    dir: d.config,
    files: [secret],
    debounceMs,
    maxWaitMs,
    onChange: (paths) => calls.push({ at: Date.now(), paths }),
  });
  watchers.push(w);
  return { d, w, calls, secret };
}

const waitFor = async (cond: () => boolean, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

const paths = (calls: { paths: string[] }[]): string[] => calls.flatMap((c) => c.paths);

describe('watchConfig', () => {
  it('fires once, after the quiet period, for a burst of saves', async () => {
    const { d, w, calls } = setup(150);
    await w.ready();
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) {
      d.write('agents.d/a.yaml', `x: ${i}\n`);
      await new Promise((r) => setTimeout(r, 30));
    }
    await waitFor(() => calls.length === 1);
    await new Promise((r) => setTimeout(r, 400));
    expect(calls).toHaveLength(1);
    expect(calls[0]!.at - t0).toBeGreaterThanOrEqual(150);
    expect(calls[0]!.paths).toEqual([join(d.config, 'agents.d', 'a.yaml')]);
  });

  it("ignores the daemon's data inside the config dir and SQLite files, and still sees a save beside them", async () => {
    const d = tempConfig({ 'llm.yaml': 'providers: {}\n', 'data/.keep': '' });
    dirs.push(d);
    const calls: { at: number; paths: string[] }[] = [];
    const w = watchConfig({
      dir: d.config,
      ignore: [join(d.config, 'data')],
      debounceMs: 50,
      onChange: (changed) => calls.push({ at: Date.now(), paths: changed }),
    });
    watchers.push(w);
    await w.ready();
    for (let i = 0; i < 10; i++) {
      d.write('data/poller.db-wal', `frame ${i}`);
      d.write('data/transcripts/s.jsonl', `line ${i}`);
      d.write('state.db', `page ${i}`);
      d.write('state.db-shm', `index ${i}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(calls).toEqual([]);
    d.write('llm.yaml', 'providers: { a: 1 }\n');
    await waitFor(() => calls.length === 1);
    expect(paths(calls)).toEqual([join(d.config, 'llm.yaml')]);
  });

  it('keeps watching when the path to ignore is the config dir itself or holds it (data_dir: .)', async () => {
    const d = tempConfig({ 'llm.yaml': 'providers: {}\n' });
    dirs.push(d);
    const calls: { at: number; paths: string[] }[] = [];
    const w = watchConfig({
      dir: d.config,
      ignore: [d.config, join(d.config, '..')],
      debounceMs: 50,
      onChange: (changed) => calls.push({ at: Date.now(), paths: changed }),
    });
    watchers.push(w);
    await w.ready();
    d.write('llm.yaml', 'providers: { a: 1 }\n');
    await waitFor(() => calls.length === 1);
    expect(paths(calls)).toEqual([join(d.config, 'llm.yaml')]);
  });

  it('sees a save by rename (write a temp file, rename it over the original)', async () => {
    const { d, w, calls } = setup();
    await w.ready();
    const tmp = join(d.config, 'agents.d', '.a.yaml.tmp');
    writeFileSync(tmp, 'x: 2\n');
    renameSync(tmp, join(d.config, 'agents.d', 'a.yaml'));
    await waitFor(() => calls.some((c) => c.paths.includes(join(d.config, 'agents.d', 'a.yaml'))));
  });

  it('sees files created after start and secret files outside the config dir', async () => {
    const { d, w, calls, secret } = setup();
    await w.ready();
    d.write('agents.d/b.yaml', 'y: 1\n');
    await waitFor(() => calls.some((c) => c.paths.includes(join(d.config, 'agents.d', 'b.yaml'))));
    writeFileSync(secret, 'v2');
    await waitFor(() => calls.some((c) => c.paths.includes(secret)));
  });

  it('caps debouncing during a long burst', async () => {
    const { d, w, calls } = setup(200, 500);
    await w.ready();
    const t0 = Date.now();
    const burst = setInterval(() => d.write('llm.yaml', `providers: {} # ${Date.now()}\n`), 50);
    try {
      await waitFor(() => calls.length >= 1, 3000);
    } finally {
      clearInterval(burst);
    }
    expect(calls[0]!.at - t0).toBeLessThan(1500);
  });

  it('ignores files in the config dir that are neither YAML nor a secret, and still sees a save beside them', async () => {
    const { d, w, calls, secret } = setup(50);
    await w.ready();
    for (let i = 0; i < 5; i++) {
      d.write('notes.txt', `note ${i}`);
      d.write('logs/daemon.log', `line ${i}`);
      d.write('agents.d/a.yaml.orig', `x: ${i}\n`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(calls).toEqual([]);
    d.write('agents.d/c.yml', 'z: 1\n');
    writeFileSync(secret, 'v3');
    await waitFor(() => paths(calls).includes(secret));
    expect(paths(calls)).toContain(join(d.config, 'agents.d', 'c.yml'));
  });

  it('ignores unrelated files beside a secret', async () => {
    const { d, w, calls } = setup();
    await w.ready();
    d.write('../secrets/other.txt', 'zzz');
    await new Promise((r) => setTimeout(r, 400));
    expect(calls).toEqual([]);
  });

  describe('secret files, followed by path', () => {
    it('fires when a secret that was missing at start is created, its directory too', async () => {
      const d = tempConfig({ 'llm.yaml': 'providers: {}\n' });
      dirs.push(d);
      const late = join(d.root, 'not-yet', 'k.key');
      const calls: { paths: string[] }[] = [];
      const w = watchConfig({
        dir: d.config,
        files: [late],
        debounceMs: 100,
        onChange: (p) => calls.push({ paths: p }),
      });
      watchers.push(w);
      await w.ready();
      mkdirSync(join(d.root, 'not-yet'));
      writeFileSync(late, 'v1', { mode: 0o600 });
      await waitFor(() => paths(calls).includes(late));
    });

    it('fires on a mode-only change (chmod 644 -> 600), which chokidar filters out', async () => {
      const { w, calls, secret } = setup();
      // As in the daemon: the secret was read (atime after mtime), then its mode was loosened.
      await new Promise((r) => setTimeout(r, 50));
      readFileSync(secret);
      chmodSync(secret, 0o644);
      await w.ready();
      await new Promise((r) => setTimeout(r, 1200)); // one check past the 644, so only the chmod counts
      const seen = calls.length;
      chmodSync(secret, 0o600);
      await waitFor(() => calls.slice(seen).some((c) => c.paths.includes(secret)));
    });

    it('fires when a secret is replaced by rename, and when it is deleted', async () => {
      const { d, w, calls, secret } = setup();
      await w.ready();
      const tmp = join(d.root, 'secrets', '.k.key.tmp');
      writeFileSync(tmp, 'v2', { mode: 0o600 });
      renameSync(tmp, secret);
      await waitFor(() => paths(calls).includes(secret));
      const seen = calls.length;
      rmSync(secret);
      await waitFor(() => calls.slice(seen).some((c) => c.paths.includes(secret)));
    });

    it('follows a linked secret: its target replaced by rename in another directory fires', async () => {
      // Mounted secrets often rotate this way: the link stays, the file it points at is replaced.
      const d = tempConfig({ 'llm.yaml': 'providers: {}\n' });
      dirs.push(d);
      const target = d.write('../store/k.key', 'v1', 0o600);
      const link = join(d.root, 'k.key');
      symlinkSync(target, link);
      const calls: { paths: string[] }[] = [];
      const w = watchConfig({
        dir: d.config,
        files: [link],
        debounceMs: 100,
        onChange: (p) => calls.push({ paths: p }),
      });
      watchers.push(w);
      await w.ready();
      writeFileSync(`${target}.tmp`, 'v2', { mode: 0o600 });
      renameSync(`${target}.tmp`, target);
      await waitFor(() => paths(calls).includes(link));
    });

    it('fires for a secret whose directory is created after start, added by setFiles', async () => {
      const { d, w, calls, secret } = setup();
      const late = join(d.root, 'later', 'deeper', 'k.key');
      w.setFiles([secret, late]);
      await w.ready();
      await new Promise((r) => setTimeout(r, 300));
      mkdirSync(join(d.root, 'later', 'deeper'), { recursive: true });
      writeFileSync(late, 'v1', { mode: 0o600 });
      await waitFor(() => paths(calls).includes(late));
    });
  });
});
