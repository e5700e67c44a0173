// Explicit reloads on a real daemon: what they read while a file is being saved, and what they answer when
// nothing changed.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentFile, baseConfig, childEnv, daemonScope, runCli, SLOW_WATCHER } from './harness.js';

const scope = daemonScope();

/** An agent file whose every proper prefix is invalid: the prompt is one quoted string over most of it. */
const agentWithPrompt = (n: number): string => agentFile(`"save ${n} ${'of a long prompt '.repeat(120)}end"`);

/** How long a reload waits for a file to be quiet (the daemon's default). */
const QUIET_MS = 200;

/**
 * A writer process that saves `file` in place `saves` times: truncate and write the first half, pause
 * `pauseMs` (blocking, so no timer lateness adds to it), write the rest, then stay idle for `idleMs`. It
 * prints each save's measured gap between the halves (`gap <ms>`: a loaded machine can stretch it past the
 * quiet window, and such a save is indistinguishable from two saves) and `done` at the end.
 */
function inPlaceWriter(file: string, saves: number, pauseMs: number, idleMs: number) {
  const script = `
    const fs = require('node:fs');
    const prompt = (n) => ${JSON.stringify(agentWithPrompt(0))}.replace('save 0 ', 'save ' + n + ' ');
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    (async () => {
      for (let n = 1; n <= ${saves}; n++) {
        const text = prompt(n);
        const fd = fs.openSync(${JSON.stringify(file)}, 'w');
        fs.writeSync(fd, text.slice(0, text.length >> 1));
        const t0 = performance.now();
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${pauseMs});
        fs.writeSync(fd, text.slice(text.length >> 1));
        console.log('gap ' + (performance.now() - t0).toFixed(1));
        fs.closeSync(fd);
        await sleep(${idleMs});
      }
      console.log('done');
    })();
  `;
  const proc = spawn(process.execPath, ['-e', script], {
    env: childEnv(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const gaps: number[] = [];
  let out = '';
  const done = new Promise<void>((resolve) =>
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const lines = out.split('\n');
      out = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('gap ')) gaps.push(Number(line.slice(4)));
        if (line === 'done') resolve();
      }
    }),
  );
  return { proc, done, gaps };
}

describe('explicit reloads read a consistent snapshot', () => {
  it(
    'agent reload racing an in-place save in two halves never reads a torn file',
    { timeout: 60_000 },
    async () => {
      const { w } = await scope.boot({
        ...baseConfig({ runtime: SLOW_WATCHER }),
        'agents.d/a.yaml': agentWithPrompt(0),
      });
      const writer = inPlaceWriter(join(w.configDir, 'agents.d', 'a.yaml'), 40, 80, 320);
      const acks: { version: number; rejected: unknown[]; errors: unknown[]; code: number | null }[] = [];
      try {
        const writing = { on: true };
        void writer.done.then(() => (writing.on = false));
        while (writing.on && acks.length < 25) {
          const r = await runCli(w, ['reload', '--config-dir', 'config', '--json']);
          const ack = JSON.parse(r.stdout) as { version: number; rejected: unknown[]; errors: unknown[] };
          acks.push({ ...ack, code: r.code });
        }
      } finally {
        writer.proc.kill();
      }
      expect(acks.length).toBeGreaterThanOrEqual(10);
      const torn = acks.filter((a) => a.code !== 0 || a.rejected.length > 0 || a.errors.length > 0);
      // A save whose halves came closer than the quiet window is never read torn. The file's change time
      // has the kernel's coarse granularity, hence the margin; a save stretched past it by a descheduled
      // writer is two saves to anyone, so a torn read is accepted only when such a save happened.
      const stretched = writer.gaps.filter((g) => g >= QUIET_MS - 20);
      expect(writer.gaps.length).toBeGreaterThanOrEqual(5);
      expect(stretched.length, `gaps ${writer.gaps.join(' ')}`).toBeLessThan(writer.gaps.length / 2);
      if (stretched.length === 0) expect(torn).toEqual([]);
      else expect(torn.length).toBeLessThanOrEqual(stretched.length);
      // The saves went through: versions moved on and never back.
      const versions = acks.map((a) => a.version);
      expect(versions.at(-1)).toBeGreaterThan(1);
      expect(versions).toEqual(versions.toSorted((a, b) => a - b));
    },
  );
});

describe('an explicit reload with nothing changed', () => {
  it('answers the running version with its applied agents and exits 0; a change still makes the next one', async () => {
    const { w, d } = await scope.boot(baseConfig({ agents: ['a', 'b'], runtime: SLOW_WATCHER }));
    for (let i = 0; i < 2; i++) {
      const r = await runCli(w, ['reload', '--config-dir', 'config']);
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^reload v1: applied=2 rejected=0 elapsed=\d+ms$/);
      expect(lines.slice(1)).toEqual(['  ✓ a', '  ✓ b']);
    }
    await d.waitFor(/msg="config reload found nothing changed" version=1/);
    expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(1);
    w.write('agents.d/a.yaml', agentFile('changed'));
    const changed = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(changed.stdout).toMatch(/^reload v2: applied=2 rejected=0/);
    const again = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^reload v2: applied=2 rejected=0/);
    expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(2);
  });
});
