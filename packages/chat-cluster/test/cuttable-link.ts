/** A TCP link to PostgreSQL that a test can cut: `cut()` closes the listener and every open connection. */
import { createConnection, createServer, type Socket } from 'node:net';

export interface CuttableLink {
  /** `postgres://...` through the link. */
  url: string;
  cut(): Promise<void>;
}

export async function cuttableLink(targetUrl: string): Promise<CuttableLink> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    cut: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
