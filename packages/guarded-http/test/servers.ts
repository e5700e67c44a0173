/** Real HTTP servers on loopback (port 0) that record what reached them. */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Address of the server socket the request arrived on. */
  localAddress: string;
  body: string;
}

export interface TestServer {
  host: string;
  port: number;
  /** `http://host:port` */
  origin: string;
  requests: RecordedRequest[];
  /** TCP connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export async function startServer(handler: Handler, host = '127.0.0.1'): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        localAddress: req.socket.localAddress ?? '',
        body,
      });
      handler(req, res, body);
    });
  });
  server.on('connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    host,
    port,
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    requests,
    connections: () => connections,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A resolver over a fixed table; counts calls per name. */
export function tableResolver(table: Record<string, string[] | ((call: number) => string[])>): {
  resolve: (hostname: string) => Promise<string[]>;
  calls: Map<string, number>;
  total(): number;
} {
  const calls = new Map<string, number>();
  return {
    calls,
    total: () => [...calls.values()].reduce((a, b) => a + b, 0),
    resolve: async (hostname: string) => {
      const name = hostname.toLowerCase().replace(/\.$/, '');
      const n = (calls.get(name) ?? 0) + 1;
      calls.set(name, n);
      const entry = table[name];
      if (entry === undefined) throw Object.assign(new Error(`no such host ${name}`), { code: 'ENOTFOUND' });
      return typeof entry === 'function' ? entry(n) : entry;
    },
  };
}
