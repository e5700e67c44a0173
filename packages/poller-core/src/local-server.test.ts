import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freeLoopbackPort, stopByPid, waitForPort } from './local-server.js';

/** A child Node process that listens on `port` (or never listens) until it is stopped. */
function child(port: number | null, detached = false) {
  const code =
    port === null
      ? 'setInterval(() => {}, 1000)'
      : `require('node:net').createServer().listen(${port}, '127.0.0.1'); setInterval(() => {}, 1000)`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: 'ignore', detached });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return { pid: proc.pid!, exited, proc };
}

describe('local servers for tests', () => {
  it('a free loopback port can be bound', async () => {
    const port = await freeLoopbackPort();
    const s = createServer();
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((r) => s.close(() => r()));
  });

  it('waits until the port answers, then stops the process (and its group) by PID', async () => {
    const port = await freeLoopbackPort();
    const c = child(port, true);
    await waitForPort(port, c.exited, () => 'never answered');
    await stopByPid(c.pid, c.exited, true);
    expect(c.proc.signalCode).toBe('SIGTERM');
  });

  it('fails at once, with the caller words, when the process exits before the port answers', async () => {
    const port = await freeLoopbackPort();
    const c = child(null);
    const waiting = waitForPort(port, c.exited, () => 'the server exited; see its log');
    c.proc.kill('SIGKILL');
    await expect(waiting).rejects.toThrow('the server exited; see its log');
  });
});
