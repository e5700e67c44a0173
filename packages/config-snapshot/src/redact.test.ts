import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { makeRedactor, secretRedactor } from './snapshot.js';
import { baseFiles, LLM, tempConfig, type TempDir } from './testing.js';

let dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

describe('redaction of secret values', () => {
  it('hides a secret as is, JSON-escaped and percent-encoded, and returns the text itself when none occurs', () => {
    const secret = 'tok "a\\b" /c?d';
    const redact = makeRedactor([secret]);
    for (const printed of [
      secret,
      JSON.stringify(secret).slice(1, -1),
      encodeURIComponent(secret),
      encodeURI(secret),
    ])
      expect(redact(`x ${printed} y`)).toBe('x [redacted] y');
    const clean = 'nothing to hide here';
    expect(redact(clean)).toBe(clean);
  });

  it('a snapshot without secrets has no redactor to install; one with secrets has its own', () => {
    const bare = tempConfig({ ...baseFiles(), 'llm.yaml': LLM.replace('key-one-1234', 'k') });
    const keyed = tempConfig(baseFiles());
    dirs.push(bare, keyed);
    const none = loadConfig(bare.config, { cwd: bare.root, env: {} }).snapshot!;
    const some = loadConfig(keyed.config, { cwd: keyed.root, env: {} }).snapshot!;
    expect(secretRedactor(none)).toBeNull();
    expect(secretRedactor(some)).toBe(some.redact);
    expect(secretRedactor(some)!('key-one-1234')).toBe('[redacted]');
  });
});
