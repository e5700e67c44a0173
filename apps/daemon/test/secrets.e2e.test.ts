// `${file:}` secrets fixed on disk are picked up by the watcher of a real daemon, without `agent reload`.
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseConfig, daemonScope, LLM, runCli, type DaemonProcess, type Workdir } from './harness.js';

const KEY = 'sk-test-secret-7731';

const scope = daemonScope();

/** A daemon whose only agent uses a provider keyed by `${file:./secrets/key}` (created with mode 600 unless `secret` is false). */
async function boot(secret = true): Promise<{ w: Workdir; d: DaemonProcess; key: string }> {
  const w = scope.workdir({ ...baseConfig(), 'llm.yaml': LLM(secret ? '${file:./secrets/key}' : KEY) });
  if (secret) w.write('../secrets/key', `${KEY}\n`, 0o600);
  const d = await scope.start(w);
  expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(1);
  return { w, d, key: join(w.root, 'secrets', 'key') };
}

/** `agent reload` rejects the agent; then `fix` runs and the watcher alone must apply version 2. */
async function rejectThenFix(w: Workdir, d: DaemonProcess, fix: () => void): Promise<void> {
  const r = await runCli(w, ['reload', '--config-dir', 'config']);
  expect(r.code, r.stdout + r.stderr).toBe(2);
  expect(r.stdout).toContain('  ✗ a: ');
  expect(await d.metric('config_last_reload_successful')).toBe(0);
  const from = d.lines.length;
  fix();
  await d.waitFor(/msg="config reload applied" version=2 applied=a rejected_count=0/, 8000, from);
  expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(2);
  expect(await d.metric('config_last_reload_successful')).toBe(1);
  expect(d.lines.join('\n') + r.stdout + r.stderr).not.toContain(KEY);
}

describe('the watcher follows ${file:} secrets', () => {
  it('a secret chmod-ed to 644 is rejected; chmod 600 applies it without agent reload', async () => {
    const { w, d, key } = await boot();
    chmodSync(key, 0o644);
    await rejectThenFix(w, d, () => chmodSync(key, 0o600));
  });

  it('a secret named while its directory did not exist applies once the file is created with mode 600', async () => {
    const { w, d } = await boot(false);
    w.write('llm.yaml', LLM('${file:./secrets/key}'));
    await rejectThenFix(w, d, () => w.write('../secrets/key', `${KEY}\n`, 0o600));
  });

  it('a deleted secret restored with the same bytes applies (the running snapshot was built from them)', async () => {
    const { w, d, key } = await boot();
    rmSync(key);
    await rejectThenFix(w, d, () => writeFileSync(key, `${KEY}\n`, { mode: 0o600 }));
  });
});
