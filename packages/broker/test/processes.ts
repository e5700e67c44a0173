import { spawn, type ChildProcess } from 'node:child_process';

/** Starts `node` on an inline ES module, with only the given environment (plus PATH). */
export function spawnNodeScript(script: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with the first stdout line matching `predicate`; rejects if the process exits first. */
export function waitForLine(
  child: ChildProcess,
  predicate: (line: string) => boolean,
  timeoutMs = 5000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    const timer = setTimeout(
      () => reject(new Error(`no matching line within ${timeoutMs} ms; stderr: ${stderr}`)),
      timeoutMs,
    );
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (predicate(line)) {
          clearTimeout(timer);
          resolve(line);
          return;
        }
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`process exited with ${code} before the expected line; stderr: ${stderr}`));
    });
  });
}

export function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** A process that binds a Unix socket and then hangs; killed with SIGKILL it leaves a stale socket. */
export const LISTEN_SCRIPT = `
import { createServer } from 'node:net';
createServer().listen(process.env.BROKER_SOCKET, () => console.log('listening'));
`;

/** A client speaking the documented frame protocol with raw node:net: one request, prints the answer. */
export const RAW_REQUEST_SCRIPT = `
import { createConnection } from 'node:net';
const sock = createConnection({ path: process.env.BROKER_SOCKET });
let buf = '';
sock.on('connect', () => {
  sock.write(JSON.stringify({ op: 'req', id: 1, subject: process.env.SUBJECT, timeout_ms: 3000, data: { from: 'child' } }) + '\\n');
});
sock.on('data', (chunk) => {
  buf += chunk;
  const nl = buf.indexOf('\\n');
  if (nl >= 0) {
    console.log(buf.slice(0, nl));
    sock.end();
  }
});
sock.on('error', (err) => { console.error(err.message); process.exit(2); });
`;

/** A responder in another process: subscribes, says "ready", answers one request, then exits. */
export const RAW_RESPONDER_SCRIPT = `
import { createConnection } from 'node:net';
const sock = createConnection({ path: process.env.BROKER_SOCKET });
const send = (frame) => sock.write(JSON.stringify(frame) + '\\n');
let buf = '';
sock.on('connect', () => {
  send({ op: 'sub', sid: 1, subject: process.env.SUBJECT });
  send({ op: 'ping', id: 1 });
});
sock.on('data', (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf('\\n')) >= 0) {
    const frame = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    if (frame.op === 'pong' && frame.id === 1) console.log('ready');
    if (frame.op === 'msg' && frame.reply) {
      send({ op: 'pub', subject: frame.reply, data: { answered_by: 'child', got: frame.data } });
      send({ op: 'ping', id: 2 });
    }
    if (frame.op === 'pong' && frame.id === 2) sock.end();
  }
});
sock.on('error', (err) => { console.error(err.message); process.exit(2); });
`;
