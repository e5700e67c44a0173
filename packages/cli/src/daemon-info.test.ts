import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdminApp, serveAdmin, type AdminInfo, type ServedApp } from '@agent/admin-api';
import { createBroker, resolveBrokerConfig, type Broker } from '@agent/broker';
import { silentLogger } from '@agent/log';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchDaemonInfo } from './daemon-info.js';
import type { CliIO } from './io.js';
import { NOT_REACHABLE_MESSAGE, runReload } from './reload.js';

// A daemon stand-in: a real admin server answering /admin/info and a real local broker answering reloads,
// both rooted in dir A; the client runs from dir B.
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).toReversed()) await c();
});

async function daemonIn(infoOver: Partial<AdminInfo> = {}) {
  const a = mkdtempSync(join(tmpdir(), 'cli-a-'));
  const b = mkdtempSync(join(tmpdir(), 'cli-b-'));
  closers.push(async () => {
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  });
  const configDir = join(a, 'config');
  mkdirSync(configDir);
  const socket = join(a, 'data', 'broker.sock');
  const broker: Broker = await createBroker(
    resolveBrokerConfig({ kind: 'local' }, { dataDir: join(a, 'data') }),
  );
  closers.push(() => broker.close());
  broker.subscribe('control.reload', async (msg) => {
    const req = msg.data as { request_id: string };
    await broker.publish('control.reload.ack', {
      request_id: req.request_id,
      version: 2,
      applied: ['a'],
      rejected: [],
      restart_required: [],
      elapsed_ms: 3,
    });
  });
  const admin: ServedApp = await serveAdmin(
    createAdminApp({
      pollers: null,
      reloadPollers: async () => ({ add: [], replace: [], remove: [], keep: [], rejected: [] }),
      reloadCredentials: async () => ({ channels: [], pollers: false }),
      info: () => ({
        version: '0.0.0',
        pid: process.pid,
        started_at: new Date(0).toISOString(),
        config_dir: configDir,
        data_dir: join(a, 'data'),
        broker: { kind: 'local', socket },
        ...infoOver,
      }),
      logger: silentLogger,
    }),
    '127.0.0.1:0',
  );
  closers.push(() => admin.close());
  // data_dir is relative: against B it names a directory where no daemon is.
  writeFileSync(
    join(configDir, 'runtime.yaml'),
    `data_dir: ./data\nadmin:\n  listen: 127.0.0.1:${admin.port}\n`,
  );
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIO = {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    cwd: b,
    env: {},
    color: false,
    setExitCode: () => {},
  };
  return { a, b, configDir, socket, io, out, err };
}

describe('clients find the daemon from another directory', () => {
  it('agent reload takes the broker socket from GET /admin/info, not from its own working directory', async () => {
    const { io, out, err, configDir } = await daemonIn();
    expect(await runReload(io, { configDir, json: false })).toBe(0);
    expect(err).toEqual([]);
    expect(out[0]).toMatch(/^reload v2: applied=1 rejected=0/);
  });

  it('a daemon that runs another config dir is not asked: the working-directory rule applies', async () => {
    const { io, err, configDir, b } = await daemonIn({ config_dir: '/elsewhere/config' });
    expect(await fetchDaemonInfo(io, configDir)).toBeNull();
    expect(await runReload(io, { configDir, json: false })).toBe(1);
    expect(err[0]).toContain(NOT_REACHABLE_MESSAGE);
    expect(err[0]).toContain(join(b, 'data', 'broker.sock'));
  });

  it('--json prints the ack pretty-printed like every other --json', async () => {
    const { io, out, configDir } = await daemonIn();
    expect(await runReload(io, { configDir, json: true })).toBe(0);
    expect(out[0]).toBe(JSON.stringify(JSON.parse(out[0]!), null, 2));
    expect(out[0]).toContain('\n  "version": 2,');
  });
});
