import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBroker, resolveBrokerConfig } from '@agent/broker';
import { afterEach, describe, expect, it } from 'vitest';
import type { CliIO } from './io.js';
import {
  formatReloadAck,
  reloadExitCode,
  runReload,
  NO_ACK_MESSAGE,
  NOT_REACHABLE_MESSAGE,
  type ReloadAck,
} from './reload.js';
import { workspaceRestart, workspaceRestartLine } from '../test/restart-required.js';

const ack = (over: Partial<ReloadAck> = {}): ReloadAck => ({
  request_id: 'r',
  version: 3,
  applied: ['a', 'b'],
  rejected: [{ agent_id: 'c', reason: 'config/agents.d/c.yaml:2:1 model: missing' }],
  rejected_jobs: [],
  errors: [],
  restart_required: [{ agent_id: 'a', field: 'workspace' }],
  elapsed_ms: 12.4,
  ...over,
});

describe('reload output', () => {
  it('prints the spec line, then ✓ and ✗ lines', () => {
    expect(formatReloadAck(ack())).toEqual([
      'reload v3: applied=2 rejected=1 elapsed=12ms',
      '  ✓ a',
      '  ✓ b',
      '  ✗ c: config/agents.d/c.yaml:2:1 model: missing',
      '  ! restart required: a workspace',
    ]);
  });
  it('names the file, the line and the reason of each restart-required change it has', () => {
    const lines = formatReloadAck(
      ack({
        restart_required: [
          workspaceRestart,
          { field: 'pollers.yaml state_db', reason: 'opened at start', file: 'config/pollers.yaml' },
        ],
      }),
    );
    expect(lines.slice(-2)).toEqual([
      workspaceRestartLine,
      '  ! restart required: pollers.yaml state_db (config/pollers.yaml): opened at start',
    ]);
  });
  it('colours only when asked', () => {
    expect(formatReloadAck(ack(), true)[1]).toBe('  \x1b[32m✓\x1b[39m a');
  });
  it('prints every rejected job and file with its located reason, and counts them as rejected', () => {
    const lines = formatReloadAck(
      ack({
        rejected: [],
        rejected_jobs: [
          {
            job_id: 'blog',
            reason: 'config/pollers.yaml:9:7 kind: kind "rs" is not registered',
            running: true,
          },
          {
            job_id: 'new',
            reason: 'config/pollers.yaml:14:7 agent: agent "x" does not exist',
            running: false,
          },
        ],
        errors: [
          { file: 'config/llm.yaml', reason: 'config/llm.yaml:4:14 providers.main.api_key: mode 0644' },
        ],
        restart_required: [],
      }),
    );
    expect(lines).toEqual([
      'reload v3: applied=2 rejected=3 elapsed=12ms',
      '  ✓ a',
      '  ✓ b',
      '  ✗ job blog: config/pollers.yaml:9:7 kind: kind "rs" is not registered (its previous definition keeps running)',
      '  ✗ job new: config/pollers.yaml:14:7 agent: agent "x" does not exist',
      '  ✗ config/llm.yaml:4:14 providers.main.api_key: mode 0644',
    ]);
  });
  it('exits 0 only when nothing was rejected; 2 when an agent, a job or a file was', () => {
    expect(reloadExitCode(ack({ rejected: [] }))).toBe(0);
    expect(reloadExitCode(ack())).toBe(2);
    expect(reloadExitCode(ack({ applied: [] }))).toBe(2);
    expect(reloadExitCode(ack({ applied: [], rejected: [] }))).toBe(0);
    expect(
      reloadExitCode(ack({ rejected: [], rejected_jobs: [{ job_id: 'j', reason: 'x', running: true }] })),
    ).toBe(2);
    expect(reloadExitCode(ack({ rejected: [], errors: [{ file: 'f', reason: 'f: bad' }] }))).toBe(2);
  });
});

describe('runReload against a local broker', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });
  function setup(): { io: CliIO; out: string[]; err: string[]; configDir: string; dataDir: string } {
    const root = mkdtempSync(join(tmpdir(), 'cli-'));
    roots.push(root);
    const configDir = join(root, 'config');
    mkdirSync(configDir);
    writeFileSync(join(configDir, 'runtime.yaml'), 'data_dir: ./data\n');
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIO = {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      cwd: root,
      env: {},
      color: false,
      setExitCode: () => {},
    };
    return { io, out, err, configDir, dataDir: join(root, 'data') };
  }

  it('daemon down: one clear line, exit 1, fast', async () => {
    const { io, err, configDir } = setup();
    const t0 = Date.now();
    expect(await runReload(io, { configDir, json: false })).toBe(1);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(err).toHaveLength(1);
    // It failed at once, so it does not claim to have waited 5 s.
    expect(err[0]).toContain(NOT_REACHABLE_MESSAGE);
    expect(err[0]).not.toContain('within 5 s');
  });

  it('prints the ack of a daemon that answers, and --json prints it raw', async () => {
    const { io, out, configDir, dataDir } = setup();
    const daemon = await createBroker(resolveBrokerConfig({ kind: 'local' }, { dataDir }));
    daemon.subscribe('control.reload', async (msg) => {
      const req = msg.data as { request_id: string };
      await daemon.publish('control.reload.ack', ack({ request_id: req.request_id }));
    });
    try {
      // The ack rejects one agent: the output says so and the exit code asks for attention.
      expect(await runReload(io, { configDir, json: false })).toBe(2);
      expect(out[0]).toBe('reload v3: applied=2 rejected=1 elapsed=12ms');
      out.length = 0;
      expect(await runReload(io, { configDir, json: true })).toBe(2);
      expect(JSON.parse(out[0]!)).toMatchObject({ version: 3, applied: ['a', 'b'] });
    } finally {
      await daemon.close();
    }
  });

  it('a daemon that never answers: exit 1 after the timeout', async () => {
    const { io, err, configDir, dataDir } = setup();
    const daemon = await createBroker(resolveBrokerConfig({ kind: 'local' }, { dataDir }));
    daemon.subscribe('control.reload', () => {});
    try {
      expect(await runReload(io, { configDir, json: false, timeoutMs: 300 })).toBe(1);
      expect(err[0]).toBe(`agent reload: ${NO_ACK_MESSAGE}`);
    } finally {
      await daemon.close();
    }
  });
});
