// A TCP proxy that injects network faults between one daemon and one server (PostgreSQL or NATS): the
// in-repository stand-in for Toxiproxy, which no registry here ships. Modes switch at run time.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { sleep } from '@agent/timers';

export type ProxyMode =
  | { kind: 'pass' }
  /** Sockets stay open, bytes are dropped both ways: a silent half-open link. */
  | { kind: 'blackhole' }
  /** Every connection is reset; new ones are reset on accept until the mode changes. */
  | { kind: 'reset' }
  /** Every chunk is delivered `ms` late, in order, in both directions. */
  | { kind: 'latency'; ms: number };

export const PASS: ProxyMode = { kind: 'pass' };
export const BLACKHOLE: ProxyMode = { kind: 'blackhole' };
export const RESET: ProxyMode = { kind: 'reset' };
export const latency = (ms: number): ProxyMode => ({ kind: 'latency', ms });

export interface FaultProxyOptions {
  target: { host: string; port: number };
  /** Listen port; 0 (default) picks a free one. */
  port?: number;
}

export interface FaultProxy {
  readonly host: string;
  readonly port: number;
  readonly mode: ProxyMode;
  /** Connections accepted since start (refused ones in `reset` mode included). */
  readonly accepted: number;
  /** Client connections open now. */
  readonly open: number;
  setMode(mode: ProxyMode): void;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

interface Link {
  client: Socket;
  upstream: Socket;
  /** Bytes were dropped: the stream is broken, so the link is reset when the blackhole ends. */
  tainted: boolean;
}

/**
 * Ends both sockets of a link. A fault (`hard`) sends an RST, as a broken link does; a peer's own close or
 * error is passed on as a plain close.
 */
function destroyLink(link: Link, links: Set<Link>, hard: boolean): void {
  links.delete(link);
  for (const s of [link.client, link.upstream]) {
    if (s.destroyed) continue;
    if (hard && s.readyState === 'open') s.resetAndDestroy();
    else s.destroy();
  }
}

/**
 * Forwards `from` to `to` under the proxy's current mode. A FIFO promise chain keeps chunk order under
 * latency; the source is paused while the destination is full.
 */
function forward(from: Socket, to: Socket, link: Link, getMode: () => ProxyMode): void {
  let chain = Promise.resolve();
  from.on('data', (chunk: Buffer) => {
    const mode = getMode();
    if (mode.kind === 'blackhole') {
      link.tainted = true;
      return;
    }
    if (mode.kind === 'reset') return;
    const delayMs = mode.kind === 'latency' ? mode.ms : 0;
    chain = chain.then(async () => {
      if (delayMs > 0) await sleep(delayMs);
      if (to.destroyed) return;
      if (getMode().kind === 'blackhole') {
        link.tainted = true;
        return;
      }
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
  });
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const links = new Set<Link>();
  let mode: ProxyMode = PASS;
  let accepted = 0;
  const getMode = (): ProxyMode => mode;

  const server: Server = createServer((client) => {
    accepted++;
    if (mode.kind === 'reset') {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(options.target.port, options.target.host);
    const link: Link = { client, upstream, tainted: false };
    links.add(link);
    forward(client, upstream, link, getMode);
    forward(upstream, client, link, getMode);
    const end = (): void => destroyLink(link, links, false);
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fault proxy: no TCP address');

  return {
    host: '127.0.0.1',
    port: address.port,
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    get open() {
      return links.size;
    },
    setMode(next) {
      const leaving = mode;
      mode = next;
      if (next.kind === 'reset') for (const link of links) destroyLink(link, links, true);
      if (leaving.kind === 'blackhole' && next.kind !== 'blackhole') {
        for (const link of links) if (link.tainted) destroyLink(link, links, true);
      }
    },
    async close() {
      for (const link of links) destroyLink(link, links, true);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
