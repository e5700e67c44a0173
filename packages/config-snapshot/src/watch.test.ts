import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempConfig, type TempDir } from './test-helpers.js';
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

  it('ignores unrelated files beside a secret', async () => {
    const { d, w, calls } = setup();
    await w.ready();
    d.write('../secrets/other.txt', 'zzz');
    await new Promise((r) => setTimeout(r, 400));
    expect(calls).toEqual([]);
  });
});
