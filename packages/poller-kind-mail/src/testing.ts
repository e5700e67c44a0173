/**
 * A loopback fake of the Gmail API v1 message endpoints, written from the public reference:
 * `GET users/me/messages` (q, maxResults <= 500, pageToken, resultSizeEstimate, ids only, newest first),
 * `GET users/me/messages/{id}?format=full` (payload parts with base64url bodies), `POST
 * users/me/messages/batchModify` (empty body on success), bearer auth checked against the fake token
 * endpoint, and Google's JSON error shape.
 * This module needs vitest: its real-server helpers come from `@agent/poller-core/testing`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeMessageSpec {
  id: string;
  threadId?: string;
  /** Default `['INBOX', 'UNREAD']`. */
  labels?: string[];
  /** ISO instant or ms. */
  at: string | number;
  from?: string;
  subject?: string;
  date?: string;
  /** Default: the text, HTML-escaped the way the API escapes snippets. */
  snippet?: string;
  text?: string;
  html?: string;
  /** Charset of the text part (`utf-8` default; `iso-8859-1` encodes as latin1). */
  charset?: string;
  /** Raw bytes of the text part (overrides `text`). */
  textBytes?: Buffer;
  /** Extra headers of the text part (e.g. Content-Transfer-Encoding). */
  partHeaders?: Record<string, string>;
}

interface StoredMessage {
  spec: FakeMessageSpec;
  labels: Set<string>;
  internalDate: number;
}

export type Route = 'list' | 'get' | 'batchModify';

export interface RequestRecord {
  method: string;
  route: Route | 'other';
  path: string;
  params: Record<string, string>;
  body?: unknown;
}

interface Fault {
  status: number;
  reason?: string;
  times: number;
  retryAfter?: string;
}

function b64url(buf: Buffer): string {
  return buf.toString('base64url');
}

function escapeSnippet(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/'/g, '&#39;')
    .replace(/"/g, '&quot;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

function googleError(status: number, reason?: string) {
  return {
    error: {
      code: status,
      message: `Fake error ${status} 401 410 invalid_grant`,
      errors: [{ message: 'fake', domain: 'global', reason: reason ?? 'backendError' }],
      status: status === 401 ? 'UNAUTHENTICATED' : status === 403 ? 'PERMISSION_DENIED' : 'UNKNOWN',
    },
  };
}

const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
  if (body === undefined) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
  res.end(JSON.stringify(body));
};

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });

export interface FakeGmail {
  readonly url: string;
  readonly requests: RequestRecord[];
  add(...specs: FakeMessageSpec[]): void;
  labels(id: string): string[];
  /** Answers `route` with `status` (and `reason`) `times` times (default 1; Infinity for always). */
  fail(route: Route, status: number, reason?: string, times?: number, retryAfter?: string): void;
  clearFaults(): void;
  /** Requests to `route` never answer until `close()`. */
  hang(route: Route): void;
  /** Stops hanging `route`: requests already waiting are dropped (as if the connection broke), later ones answer. */
  unhang(route: Route): void;
  count(route: Route): number;
  close(): Promise<void>;
}

export async function startFakeGmail(opts: {
  isValid: (token: string) => boolean;
  now: () => number;
}): Promise<FakeGmail> {
  const messages = new Map<string, StoredMessage>();
  const requests: RequestRecord[] = [];
  const faults = new Map<Route, Fault>();
  const hanging = new Set<Route>();
  const hung: ServerResponse[] = [];

  const matches = (m: StoredMessage, q: string): boolean => {
    for (const term of q.split(/\s+/).filter(Boolean)) {
      const [k, v] = term.includes(':')
        ? [term.slice(0, term.indexOf(':')).toLowerCase(), term.slice(term.indexOf(':') + 1)]
        : ['', term];
      if (k === 'is' && v === 'unread') {
        if (!m.labels.has('UNREAD')) return false;
      } else if (k === 'is' && v === 'read') {
        if (m.labels.has('UNREAD')) return false;
      } else if (k === 'newer_than') {
        const n = Number(v.slice(0, -1));
        const unit = { d: 86_400_000, m: 30 * 86_400_000, y: 365 * 86_400_000 }[v.slice(-1)] ?? 0;
        if (!(m.internalDate > opts.now() - n * unit)) return false;
      } else if (k === 'from') {
        if (!(m.spec.from ?? '').toLowerCase().includes(v.toLowerCase())) return false;
      } else if (k === 'label') {
        if (!m.labels.has(v.toUpperCase())) return false;
      } else if (k === '') {
        const hay = `${m.spec.subject ?? ''} ${m.spec.text ?? ''} ${m.spec.html ?? ''}`.toLowerCase();
        if (!hay.includes(v.toLowerCase())) return false;
      }
    }
    return true;
  };

  const resource = (m: StoredMessage) => {
    const s = m.spec;
    const headers = [
      { name: 'From', value: s.from ?? 'someone@example.com' },
      { name: 'To', value: 'me@example.com' },
      { name: 'Subject', value: s.subject ?? '' },
      { name: 'Date', value: s.date ?? new Date(m.internalDate).toUTCString() },
    ];
    const textPart = (s.text !== undefined || s.textBytes) && {
      partId: '0',
      mimeType: 'text/plain',
      filename: '',
      headers: [
        { name: 'Content-Type', value: `text/plain; charset="${s.charset ?? 'UTF-8'}"` },
        ...Object.entries(s.partHeaders ?? {}).map(([name, value]) => ({ name, value })),
      ],
      body: {
        size: 1,
        data: b64url(
          s.textBytes ??
            Buffer.from(s.text ?? '', s.charset?.toLowerCase() === 'iso-8859-1' ? 'latin1' : 'utf8'),
        ),
      },
    };
    const htmlPart = s.html !== undefined && {
      partId: '1',
      mimeType: 'text/html',
      filename: '',
      headers: [{ name: 'Content-Type', value: 'text/html; charset="UTF-8"' }],
      body: { size: 1, data: b64url(Buffer.from(s.html, 'utf8')) },
    };
    const attachment = {
      partId: '2',
      mimeType: 'application/pdf',
      filename: 'invoice.pdf',
      headers: [{ name: 'Content-Disposition', value: 'attachment; filename="invoice.pdf"' }],
      body: { size: 12345, attachmentId: 'ANGjdJ8' },
    };
    const parts = [textPart, htmlPart].filter(Boolean);
    const payload =
      parts.length === 1
        ? {
            partId: '',
            mimeType: 'multipart/mixed',
            headers,
            body: { size: 0 },
            parts: [parts[0], attachment],
          }
        : {
            partId: '',
            mimeType: 'multipart/mixed',
            headers,
            body: { size: 0 },
            parts: [
              { partId: '0', mimeType: 'multipart/alternative', headers: [], body: { size: 0 }, parts },
              attachment,
            ],
          };
    return {
      id: s.id,
      threadId: s.threadId ?? `t-${s.id}`,
      labelIds: [...m.labels],
      snippet: s.snippet ?? escapeSnippet((s.text ?? '').slice(0, 100)),
      historyId: '1234',
      internalDate: String(m.internalDate),
      sizeEstimate: 2048,
      payload,
    };
  };

  const server = createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://x');
      const raw = await readBody(req);
      const base = '/gmail/v1/users/me/messages';
      const route: Route | 'other' =
        req.method === 'GET' && u.pathname === base
          ? 'list'
          : req.method === 'POST' && u.pathname === `${base}/batchModify`
            ? 'batchModify'
            : req.method === 'GET' && u.pathname.startsWith(`${base}/`)
              ? 'get'
              : 'other';
      const rec: RequestRecord = {
        method: req.method ?? 'GET',
        route,
        path: u.pathname,
        params: Object.fromEntries(u.searchParams),
      };
      if (raw) rec.body = JSON.parse(raw) as unknown;
      requests.push(rec);
      const auth = req.headers.authorization ?? '';
      if (!auth.startsWith('Bearer ') || !opts.isValid(auth.slice(7)))
        return send(res, 401, googleError(401, 'authError'));
      if (route === 'other') return send(res, 404, googleError(404, 'notFound'));
      if (hanging.has(route)) return void hung.push(res);
      const fault = faults.get(route);
      if (fault && fault.times > 0) {
        fault.times--;
        return send(
          res,
          fault.status,
          googleError(fault.status, fault.reason),
          fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
        );
      }
      if (route === 'list') {
        const q = u.searchParams.get('q') ?? '';
        const max = Math.min(500, Number(u.searchParams.get('maxResults') ?? 100) || 100);
        const offset = Number((u.searchParams.get('pageToken') ?? 'p0').slice(1)) || 0;
        const all = [...messages.values()]
          .filter((m) => matches(m, q))
          .sort((a, b) => b.internalDate - a.internalDate);
        const page = all.slice(offset, offset + max);
        return send(res, 200, {
          ...(page.length
            ? {
                messages: page.map((m) => ({ id: m.spec.id, threadId: m.spec.threadId ?? `t-${m.spec.id}` })),
              }
            : {}),
          ...(offset + max < all.length ? { nextPageToken: `p${offset + max}` } : {}),
          resultSizeEstimate: all.length,
        });
      }
      if (route === 'get') {
        const id = decodeURIComponent(u.pathname.slice(base.length + 1));
        const m = messages.get(id);
        if (!m) return send(res, 404, googleError(404, 'notFound'));
        return send(res, 200, resource(m));
      }
      const body = rec.body as { ids?: string[]; addLabelIds?: string[]; removeLabelIds?: string[] };
      if (!Array.isArray(body?.ids) || body.ids.length > 1000)
        return send(res, 400, googleError(400, 'invalidArgument'));
      for (const id of body.ids) {
        const m = messages.get(id);
        if (!m) continue;
        for (const l of body.removeLabelIds ?? []) m.labels.delete(l);
        for (const l of body.addLabelIds ?? []) m.labels.add(l);
      }
      return send(res, 204);
    })().catch(() => send(res, 500, googleError(500)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    add(...specs) {
      for (const spec of specs)
        messages.set(spec.id, {
          spec,
          labels: new Set(spec.labels ?? ['INBOX', 'UNREAD']),
          internalDate: typeof spec.at === 'number' ? spec.at : Date.parse(spec.at),
        });
    },
    labels: (id) => [...(messages.get(id)?.labels ?? [])],
    fail(route, status, reason, times = 1, retryAfter) {
      faults.set(route, {
        status,
        times,
        ...(reason ? { reason } : {}),
        ...(retryAfter ? { retryAfter } : {}),
      });
    },
    clearFaults: () => faults.clear(),
    hang: (route) => void hanging.add(route),
    unhang: (route) => {
      hanging.delete(route);
      for (const r of hung.splice(0)) r.destroy();
    },
    count: (route) => requests.filter((r) => r.route === route).length,
    async close() {
      for (const r of hung) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
/** A real Dovecot IMAP server on a free loopback port (optionally with TLS and XOAUTH2), for tests of hosts and of this kind */
export { startDovecot, type DovecotOptions, type DovecotServer } from './dovecot-server.js';
