// A `${file:}` secret owned by another user than the daemon's is refused like a readable one.
import { chownSync, lchownSync, symlinkSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { baseFiles, tempConfig, type TempDir } from './testing.js';

const OTHER_UID = 65534;
let dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

/** chown, or a failure that says why this test cannot run here: it is never skipped in silence. */
function giveAway(path: string, link = false): void {
  const own = process.getuid?.();
  if (own === undefined) throw new Error('this platform has no uids: the owner check does not apply here');
  if (own === OTHER_UID)
    throw new Error(`the tests run as uid ${OTHER_UID}, the uid this test gives files to`);
  try {
    (link ? lchownSync : chownSync)(path, OTHER_UID, OTHER_UID);
  } catch (err) {
    throw new Error(
      `cannot chown ${path} to uid ${OTHER_UID} (${(err as NodeJS.ErrnoException).code}): run the tests as root (or with CAP_CHOWN) to check secret file owners`,
      { cause: err },
    );
  }
}

const LLM_TWO =
  'providers:\n  main:\n    type: openai\n    base_url: http://x/v1\n    api_key: key-one-1234\n  other:\n    type: openai\n    base_url: http://x/v1\n    api_key: ${file:secrets/k.key}\n';

describe('secret file owner', () => {
  it('a file owned by another uid is refused, located, with a chown hint; the rest loads', () => {
    const d = tempConfig({ ...baseFiles(), 'llm.yaml': LLM_TWO });
    dirs.push(d);
    const key = d.write('../secrets/k.key', 'sk-owned-elsewhere-1\n', 0o600);
    giveAway(key);
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    const e = r.errors.find((x) => x.code === 'CONFIG_SECRET_OWNER')!;
    expect(e).toMatchObject({ path: 'providers.other.api_key', line: 9, provider: 'other' });
    expect(e.message).toBe(
      `secret file secrets/k.key is owned by uid ${OTHER_UID}, not by the daemon's user (uid ${process.getuid!()})`,
    );
    expect(e.hint).toBe(`chown ${userInfo().username} ${key}`);
    expect(JSON.stringify(r)).not.toContain('sk-owned-elsewhere-1');
    // The provider that does not use the file, and the agent on it, load.
    expect(r.snapshot!.provider('main')).toBeDefined();
    expect(r.snapshot!.provider('other')).toBeUndefined();
    expect([...r.snapshot!.agents.keys()]).toEqual(['a']);

    // Given back: accepted, and the change shows in the content hash (the watcher reloads on it).
    chownSync(key, process.getuid!(), process.getgid!());
    const ok = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(ok.errors).toEqual([]);
    expect(ok.contentHash).not.toBe(r.contentHash);
  });

  it('is checked on the target of a link, not on the link', () => {
    const d = tempConfig({ ...baseFiles(), 'llm.yaml': LLM_TWO });
    dirs.push(d);
    const target = d.write('../secrets/real.key', 'sk-linked-owner-2', 0o600);
    const link = join(d.root, 'secrets', 'k.key');
    symlinkSync(target, link);
    giveAway(link, true);
    expect(loadConfig(d.config, { cwd: d.root, env: {} }).errors).toEqual([]);
    giveAway(target);
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect(r.errors.map((e) => e.code)).toEqual(['CONFIG_SECRET_OWNER']);
    expect(r.errors[0]!.message).toContain(`secrets/k.key (-> ${target})`);
    expect(r.errors[0]!.hint).toBe(`chown ${userInfo().username} ${target}`);
  });
});
