/**
 * Test kit: a TCP link to a server (PostgreSQL, NATS) that a test can cut. `cut()` closes every open
 * connection and refuses new ones until `restore()`; `close()` ends the link for good.
 */
import { createConnection, createServer, type Socket } from 'node:net';

export interface CuttableLink {
  /** The target URL with its host and port replaced by the link's. */
  readonly url: string;
  cut(): Promise<void>;
  restore(): void;
  close(): Promise<void>;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = {
  'postgres:': 5432,
  'postgresql:': 5432,
  'nats:': 4222,
};

export async function cuttableLink(targetUrl: string): Promise<CuttableLink> {
  const target = new URL(targetUrl);
  const targetPort = Number(target.port) || DEFAULT_PORTS[target.protocol];
  if (!targetPort) throw new Error(`cuttableLink: ${target.protocol} URL without a port`);
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection(targetPort, target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // A test that never closes its link must not keep its process alive.
  server.unref();
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  const dropAll = (): void => {
    for (const s of sockets) s.destroy();
  };
  return {
    url: url.toString(),
    async cut() {
      refusing = true;
      dropAll();
    },
    restore() {
      refusing = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        dropAll();
        server.close(() => resolve());
      }),
  };
}
