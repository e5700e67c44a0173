/**
 * A loopback TCP relay in front of a real IMAP server that records what clients send (the text of a
 * plain-text session, e.g. the `AUTHENTICATE` line) and counts the client connections still open.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface ImapRelay {
  readonly port: number;
  /** Lines clients sent, in order, across connections. */
  sent(): string[];
  /** Client connections open right now. */
  open(): number;
  close(): Promise<void>;
}

export async function startImapRelay(upstreamPort: number): Promise<ImapRelay> {
  const lines: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(upstreamPort, '127.0.0.1');
    let pending = '';
    client.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        lines.push(pending.slice(0, nl).replace(/\r$/, ''));
        pending = pending.slice(nl + 1);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', () => {
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    sent: () => [...lines],
    open: () => sockets.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
