/**
 * A real Radicale CalDAV server for tests: a scratch directory, a free loopback port, one user
 * (`test` / `test`) with one calendar (`/test/cal/`) and more on demand, stopped by its PID. Needs Debian's `radicale`
 * (`.ci/ensure-mail-calendar-servers.sh`); without it `startRadicale` fails and says how to install it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLoopbackPort, stopByPid, waitForPort } from '@agent/poller-core/testing';

const RADICALE = '/usr/bin/radicale';

/** One calendar collection of the test user. */
export interface RadicaleCalendar {
  /** `http://127.0.0.1:<port>/test/<name>/`. */
  readonly calendarUrl: string;
  /** PUTs (creates or replaces) `<name>.ics` in the calendar; the HTTP status. */
  put(name: string, ics: string): Promise<number>;
  remove(name: string): Promise<number>;
  /**
   * Deletes the server's record of issued sync tokens: a token a client holds is refused (403) at the first
   * sync after the collection changed (an unchanged collection is answered without looking the token up).
   */
  forgetSyncTokens(): void;
}

/** The server; its own methods act on the calendar `/test/cal/`, made at start. */
export interface RadicaleServer extends RadicaleCalendar {
  readonly port: number;
  readonly user: string;
  readonly password: string;
  /** Makes another calendar collection (MKCALENDAR), e.g. one per test. */
  calendar(name: string): Promise<RadicaleCalendar>;
  stop(): Promise<void>;
}

export async function startRadicale(): Promise<RadicaleServer> {
  if (!existsSync(RADICALE))
    throw new Error(
      `${RADICALE} is missing: install Debian's radicale (bash .ci/ensure-mail-calendar-servers.sh)`,
    );
  const dir = mkdtempSync(join(tmpdir(), 'rad.'));
  const port = await freeLoopbackPort();
  writeFileSync(join(dir, 'users'), 'test:test\n');
  writeFileSync(
    join(dir, 'config'),
    `[server]\nhosts = 127.0.0.1:${port}\nssl = False\n[auth]\ntype = htpasswd\nhtpasswd_filename = ${dir}/users\nhtpasswd_encryption = plain\ndelay = 0\n[rights]\ntype = owner_only\n[storage]\nfilesystem_folder = ${dir}/collections\n[web]\ntype = none\n[logging]\nlevel = warning\nmask_passwords = True\n`,
  );
  const child = spawn(RADICALE, ['-C', join(dir, 'config')], { stdio: 'ignore' });
  const pid = child.pid!;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPort(port, exited, () => `radicale did not start (config in ${dir})`);
  const base = `http://127.0.0.1:${port}`;
  const auth = `Basic ${Buffer.from('test:test').toString('base64')}`;
  const calendar = async (name: string): Promise<RadicaleCalendar> => {
    const calendarUrl = `${base}/test/${name}/`;
    const made = await fetch(calendarUrl, {
      method: 'MKCALENDAR',
      headers: { authorization: auth, 'content-type': 'application/xml' },
      body: `<?xml version="1.0"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:displayname>${name}</D:displayname></D:prop></D:set></C:mkcalendar>`,
    });
    if (made.status !== 201) throw new Error(`MKCALENDAR ${name} answered ${made.status}`);
    return {
      calendarUrl,
      async put(item, ics) {
        const r = await fetch(`${calendarUrl}${item}.ics`, {
          method: 'PUT',
          headers: { authorization: auth, 'content-type': 'text/calendar; charset=utf-8' },
          body: ics,
        });
        return r.status;
      },
      async remove(item) {
        const r = await fetch(`${calendarUrl}${item}.ics`, {
          method: 'DELETE',
          headers: { authorization: auth },
        });
        return r.status;
      },
      forgetSyncTokens() {
        rmSync(join(dir, 'collections', 'collection-root', 'test', name, '.Radicale.cache', 'sync-token'), {
          recursive: true,
          force: true,
        });
      },
    };
  };
  const cal = await calendar('cal');
  return {
    port,
    user: 'test',
    password: 'test',
    calendarUrl: cal.calendarUrl,
    put: (name, ics) => cal.put(name, ics),
    remove: (name) => cal.remove(name),
    forgetSyncTokens: () => cal.forgetSyncTokens(),
    calendar,
    async stop() {
      await stopByPid(pid, exited, false);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
