import type { ServerResponse } from 'node:http';
import { sendJson, readBody, startLoopbackServer } from './http.js';

/** One accepted `POST /{version}/{phone_number_id}/messages` call. */
export interface FakeWhatsAppSend {
  apiVersion: string;
  phoneNumberId: string;
  authorization: string | undefined;
  /** The parsed JSON request body. */
  body: Record<string, unknown>;
  to: string;
  text: string;
  /** The `wamid` answered. */
  id: string;
}

export interface FakeWhatsAppOptions {
  /** When set, requests without `Authorization: Bearer <accessToken>` get 401 (OAuthException 190). */
  accessToken?: string;
}

export interface FakeWhatsApp {
  /** Use as the instance's `base_url`. */
  readonly baseUrl: string;
  /** Successful sends, in arrival order. */
  readonly sends: FakeWhatsAppSend[];
  /** Every request that reached the fake, successful or not. */
  readonly requests: { method: string; path: string; authorization: string | undefined; body: string }[];
  /**
   * Answers `times` (default 1) send requests with `status` and a Graph API error body, after
   * letting `skip` (default 0) requests succeed first.
   */
  failNext(
    status: number,
    options?: { message?: string; code?: number; times?: number; skip?: number },
  ): void;
  close(): Promise<void>;
}

function graphError(res: ServerResponse, status: number, message: string, code: number): void {
  sendJson(res, status, { error: { message, type: 'OAuthException', code, fbtrace_id: 'AbCdEf012345' } });
}

/**
 * A loopback stand-in for the WhatsApp Cloud API messages endpoint, following Meta's public
 * documentation: text messages only, Graph API error bodies, `wamid.` message ids.
 */
export async function createFakeWhatsApp(options: FakeWhatsAppOptions = {}): Promise<FakeWhatsApp> {
  const sends: FakeWhatsAppSend[] = [];
  const requests: FakeWhatsApp['requests'] = [];
  const failures: { status: number; message: string; code: number; skip: number }[] = [];
  let counter = 0;

  const server = await startLoopbackServer(async (req, res) => {
    const raw = await readBody(req);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const authorization = req.headers.authorization;
    requests.push({ method: req.method ?? '', path, authorization, body: raw });
    const m = /^\/(v[0-9]+\.[0-9]+)\/([^/]+)\/messages$/.exec(path);
    if (!m || req.method !== 'POST') {
      graphError(res, 400, 'Unsupported request - method type: ' + (req.method ?? '').toLowerCase(), 100);
      return;
    }
    if (options.accessToken !== undefined && authorization !== `Bearer ${options.accessToken}`) {
      graphError(res, 401, 'Invalid OAuth access token - Cannot parse access token', 190);
      return;
    }
    const head = failures[0];
    let failure: typeof head;
    if (head && head.skip > 0) head.skip--;
    else failure = failures.shift();
    if (failure) {
      graphError(res, failure.status, failure.message, failure.code);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      graphError(res, 400, 'Invalid JSON for postbody', 100);
      return;
    }
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const text = (b.text ?? {}) as Record<string, unknown>;
    if (b.messaging_product !== 'whatsapp') {
      graphError(res, 400, '(#100) The parameter messaging_product is required.', 100);
      return;
    }
    if (typeof b.to !== 'string' || b.to === '') {
      graphError(res, 400, '(#100) The parameter to is required.', 100);
      return;
    }
    if (b.type !== 'text' || typeof text.body !== 'string' || text.body === '') {
      graphError(res, 400, "(#100) The parameter text['body'] is required.", 100);
      return;
    }
    if (text.body.length > 4096) {
      graphError(res, 400, "(#100) Param text['body'] must be at most 4096 characters long.", 100);
      return;
    }
    const id = `wamid.FAKE${String(++counter).padStart(6, '0')}`;
    sends.push({
      apiVersion: m[1] as string,
      phoneNumberId: decodeURIComponent(m[2] as string),
      authorization,
      body: b,
      to: b.to,
      text: text.body,
      id,
    });
    sendJson(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: b.to, wa_id: b.to }],
      messages: [{ id }],
    });
  });

  return {
    baseUrl: server.baseUrl,
    sends,
    requests,
    failNext(status, opts = {}) {
      for (let i = 0; i < (opts.times ?? 1); i++) {
        failures.push({
          status,
          message: opts.message ?? `fake failure ${status}`,
          code: opts.code ?? 131000,
          skip: i === 0 ? (opts.skip ?? 0) : 0,
        });
      }
    },
    close: () => server.close(),
  };
}

export interface TextWebhookInput {
  phoneNumberId: string;
  from: string;
  id: string;
  text: string;
  /** Unix seconds, as a string in the vendor's payloads; default "1700000000". */
  timestamp?: string;
  name?: string;
}

/** A webhook notification body carrying text messages, shaped like Meta's `messages` field payload. */
export function textWebhookPayload(messages: TextWebhookInput[]): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: messages.map((m) => ({
      id: 'WHATSAPP_BUSINESS_ACCOUNT_ID',
      changes: [
        {
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550000000', phone_number_id: m.phoneNumberId },
            contacts: [{ profile: { name: m.name ?? 'Test User' }, wa_id: m.from }],
            messages: [
              {
                from: m.from,
                id: m.id,
                timestamp: m.timestamp ?? '1700000000',
                type: 'text',
                text: { body: m.text },
              },
            ],
          },
        },
      ],
    })),
  };
}

/** A webhook notification body with a delivery status only (no messages). */
export function statusWebhookPayload(
  phoneNumberId: string,
  messageId: string,
  recipient: string,
): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'WHATSAPP_BUSINESS_ACCOUNT_ID',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550000000', phone_number_id: phoneNumberId },
              statuses: [
                { id: messageId, status: 'delivered', timestamp: '1700000001', recipient_id: recipient },
              ],
            },
          },
        ],
      },
    ],
  };
}
