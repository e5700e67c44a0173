// A `${file:}` secret that is not a regular file is refused before it is opened, naming what it is.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { formatIssue } from './issues.js';
import { baseFiles, LLM, tempConfig, type TempDir } from './testing.js';

let dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

function withKeyAt(path: string): TempDir {
  const d = tempConfig({ ...baseFiles(), 'llm.yaml': LLM.replace('key-one-1234', `\${file:${path}}`) });
  dirs.push(d);
  mkdirSync(join(d.root, 'secrets'), { recursive: true });
  return d;
}

describe('${file:} secrets that are not regular files', () => {
  it('a FIFO is CONFIG_SECRET_NOT_FILE naming the type (not EISDIR), and the load does not wait for a writer', () => {
    const d = withKeyAt('secrets/key.fifo');
    execFileSync('mkfifo', ['-m', '600', join(d.root, 'secrets', 'key.fifo')]);
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    const e = r.errors.find((x) => x.scope === 'provider')!;
    expect(e.code).toBe('CONFIG_SECRET_NOT_FILE');
    expect(e.message).toBe('secret file secrets/key.fifo is a FIFO (named pipe), not a regular file');
    expect(formatIssue(e)).not.toContain('EISDIR');
    expect(r.secretFiles).toEqual([join(d.root, 'secrets', 'key.fifo')]);
  });

  it('a directory is CONFIG_SECRET_NOT_FILE too', () => {
    const d = withKeyAt('secrets/dir');
    mkdirSync(join(d.root, 'secrets', 'dir'), { mode: 0o700 });
    const e = loadConfig(d.config, { cwd: d.root, env: {} }).errors.find((x) => x.scope === 'provider')!;
    expect(e).toMatchObject({
      code: 'CONFIG_SECRET_NOT_FILE',
      message: 'secret file secrets/dir is a directory, not a regular file',
    });
  });
});
