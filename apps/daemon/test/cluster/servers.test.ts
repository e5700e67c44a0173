// Throwaway PostgreSQL and NATS: started on free ports, answering, restarted, stopped by PID.
import { connect } from 'node:net';
import { createPool } from '@agent/pg';
import { afterEach, describe, expect, it } from 'vitest';
import { processAlive } from './process-tools.js';
import { findPgBin, startNats, startPostgres, type NatsServer, type PgServer } from './servers.js';

let pg: PgServer | undefined;
let nats: NatsServer | undefined;
afterEach(async () => {
  await pg?.stop();
  await nats?.stop();
  pg = undefined;
  nats = undefined;
});

async function selectOne(url: string): Promise<string> {
  const pool = createPool({ url, applicationName: 'servers test', max: 1, connectTimeoutMs: 3000 });
  try {
    const r = await pool.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    return r.rows[0]!.v;
  } finally {
    await pool.end();
  }
}

/** The INFO line a NATS server greets with, parsed. */
function natsInfo(port: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /^INFO (\{.*\}) *\r\n/.exec(buf);
      if (!m) return;
      s.destroy();
      resolve(JSON.parse(m[1]!) as Record<string, unknown>);
    });
    s.once('error', reject);
  });
}

describe('throwaway servers', () => {
  it('PostgreSQL starts on a free port, survives an immediate restart, and stops by PID', async () => {
    pg = await startPostgres();
    expect(await selectOne(pg.url)).toMatch(/^\d+/);
    const first = pg.pid;
    await pg.restart({ immediate: true });
    expect(pg.pid).not.toBe(first);
    expect(processAlive(first)).toBe(false);
    expect(await selectOne(pg.url)).toMatch(/^\d+/);
    const last = pg.pid;
    await pg.stop();
    pg = undefined;
    expect(processAlive(last)).toBe(false);
  });

  it('names the missing PostgreSQL binaries instead of skipping', () => {
    expect(() => findPgBin(['/nonexistent/bin'])).toThrow(
      /initdb, pg_ctl\) not found in \/nonexistent\/bin; install them/,
    );
  });

  it('NATS starts with JetStream on a free port and stops by PID', async () => {
    nats = await startNats();
    const info = await natsInfo(nats.port);
    expect(info['jetstream']).toBe(true);
    const pid = nats.pid;
    await nats.stop();
    nats = undefined;
    expect(processAlive(pid)).toBe(false);
  });
});
