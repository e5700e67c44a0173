// A loopback TCP relay in front of a real IMAP server that can hold the client's flag changes: while
// holding, a client command line that matches `UID STORE` (and everything the client sends after it on
// that connection) stays in the relay instead of reaching the server. A daemon killed meanwhile has
// delivered a message whose `\Seen` the server never got: the kill lands between delivery and `\Seen`
// every time, whatever the timing of the kill.
import { createServer, connect, type Socket } from 'node:net';

const STORE = /^\S+ UID STORE /i;

export interface ImapHold {
  readonly port: number;
  /** STORE commands held back so far. */
  held(): number;
  /** Resolves once every client connection accepted so far has closed (its last bytes are read). */
  settled(): Promise<void>;
  /** Stops holding: held bytes of open connections go to the server, later ones pass through. */
  release(): void;
  close(): Promise<void>;
}

export async function startImapHold(upstreamPort: number): Promise<ImapHold> {
  let holding = true;
  let heldCount = 0;
  const open = new Set<{ closed: Promise<void>; flush(): void; destroy(): void }>();

  const server = createServer((client: Socket) => {
    const upstream = connect(upstreamPort, '127.0.0.1');
    let pending = '';
    let parked: Buffer[] | null = null;
    const forward = (chunk: Buffer) => {
      if (parked) return void parked.push(chunk);
      if (!holding) return void upstream.write(chunk);
      // Line by line, so that the bytes before a STORE still reach the server.
      pending += chunk.toString('latin1');
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl + 1);
        pending = pending.slice(nl + 1);
        if (STORE.test(line)) {
          heldCount++;
          parked = [Buffer.from(line + pending, 'latin1')];
          pending = '';
          return;
        }
        upstream.write(Buffer.from(line, 'latin1'));
      }
    };
    const entry = {
      closed: new Promise<void>((resolve) => client.once('close', () => resolve())),
      flush() {
        const bytes = [...(parked ?? []), Buffer.from(pending, 'latin1')];
        parked = null;
        pending = '';
        for (const b of bytes) if (b.length) upstream.write(b);
      },
      destroy: () => client.destroy(),
    };
    open.add(entry);
    void entry.closed.then(() => open.delete(entry));
    client.on('data', forward);
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    // A closed client drops what it had parked: those bytes never reach the server.
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    port,
    held: () => heldCount,
    async settled() {
      await Promise.all([...open].map((e) => e.closed));
    },
    release() {
      holding = false;
      for (const e of open) e.flush();
    },
    async close() {
      for (const e of open) e.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
