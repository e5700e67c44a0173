/**
 * A loopback HTTP proxy in front of a real CalDAV server that can answer `sync-collection` REPORTs the way
 * RFC 6578 lets a server answer them and Radicale never does on its own: a truncated result (the first
 * members, a `507` response for the collection itself and a sync token of the proxy's own, §3.6), whose
 * token then gets the rest with the server's real token; or `410 Gone` for every sync. Everything else
 * (the baseline, `calendar-multiget`, ...) passes through unchanged.
 */
import { startRecordingServer } from '@agent/poller-core/testing';

export interface SyncProxy {
  /** `http://127.0.0.1:<port>`: the upstream's paths under another origin. */
  readonly origin: string;
  /** The sync token of each `sync-collection` REPORT, in order (`''` for a baseline). */
  syncTokens(): string[];
  /** Continuation tokens the proxy handed out in truncated answers, in order. */
  issued(): string[];
  /** The next sync whose answer has more than `n` members is cut after `n`. */
  truncateNext(n: number): void;
  /** Every later sync is answered 410 Gone. */
  gone(): void;
  close(): Promise<void>;
}

const multistatus = (responses: string[], token: string) =>
  `<?xml version="1.0" encoding="utf-8"?>\n<multistatus xmlns="DAV:"><sync-token>${token}</sync-token>${responses.join('')}</multistatus>`;

export async function startSyncProxy(upstreamOrigin: string): Promise<SyncProxy> {
  const tokens: string[] = [];
  const handedOut: string[] = [];
  /** Continuation token -> the members still to send and the upstream's token after them. */
  const rest = new Map<string, { responses: string[]; token: string }>();
  let cutAfter: number | null = null;
  let gone = false;

  const server = await startRecordingServer((req, res) => {
    void (async () => {
      const { body, path } = req;
      const isSync = req.method === 'REPORT' && /<(?:\w+:)?sync-collection\b/.test(body);
      if (isSync) {
        const token = /<(?:\w+:)?sync-token>([^<]*)<\/(?:\w+:)?sync-token>/.exec(body)?.[1] ?? '';
        tokens.push(token);
        if (gone) {
          res.writeHead(410, { 'content-type': 'text/plain' });
          return void res.end('sync token expired');
        }
        const later = rest.get(token);
        if (later) {
          rest.delete(token);
          res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' });
          return void res.end(multistatus(later.responses, later.token));
        }
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
      const up = await fetch(`${upstreamOrigin}${path}`, {
        method: req.method,
        headers,
        ...(body ? { body } : {}),
      });
      const text = await up.text();
      const responses = [...text.matchAll(/<(?:\w+:)?response\b[\s\S]*?<\/(?:\w+:)?response>/g)].map(
        (m) => m[0],
      );
      const upToken = /<(?:\w+:)?sync-token>([^<]*)<\/(?:\w+:)?sync-token>/.exec(text)?.[1];
      if (isSync && up.status === 207 && cutAfter !== null && upToken && responses.length > cutAfter) {
        const continuation = `http://sync-proxy.test/continue/${handedOut.length + 1}`;
        handedOut.push(continuation);
        rest.set(continuation, { responses: responses.slice(cutAfter), token: upToken });
        const insufficient = `<response><href>${new URL(path, 'http://x').pathname}</href><status>HTTP/1.1 507 Insufficient Storage</status></response>`;
        const first = responses.slice(0, cutAfter);
        cutAfter = null;
        res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' });
        return void res.end(multistatus([...first, insufficient], continuation));
      }
      res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'text/plain' });
      res.end(text);
    })().catch(() => {
      res.writeHead(502);
      res.end();
    });
  });
  return {
    origin: server.url,
    syncTokens: () => [...tokens],
    issued: () => [...handedOut],
    truncateNext(n) {
      cutAfter = n;
    },
    gone() {
      gone = true;
    },
    close: () => server.close(),
  };
}
