/**
 * For tests that run a real server (an IMAP or CalDAV server, a database) as a child process: a free
 * loopback port, waiting until the port answers, and stopping the process by its PID.
 */
import { connect, createServer } from 'node:net';
import { sleep } from '@agent/timers';

/** A loopback port that was free a moment ago (bound to port 0, then released). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** Polls the port every 50 ms for up to 10 s; fails early when the process exits. */
export async function waitForPort(port: number, exited: Promise<void>, why: () => string): Promise<void> {
  const state = { gone: false };
  void exited.then(() => (state.gone = true));
  for (let i = 0; i < 200 && !state.gone; i++) {
    if (await answers(port)) return;
    await sleep(50);
  }
  throw new Error(why());
}

/** SIGTERM to the PID (or its process group), then waits for the exit; SIGKILL after 10 s. */
export async function stopByPid(pid: number, exited: Promise<void>, group: boolean): Promise<void> {
  const target = group ? -pid : pid;
  try {
    process.kill(target, 'SIGTERM');
  } catch {
    return;
  }
  const done = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
  if (!done) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // already gone
    }
    await exited;
  }
}
