import type { ServerResponse } from 'node:http';
import { setTimer, type TimerHandle } from '@agent/timers';
import { readBody, sendJson, startLoopbackServer } from './http.js';

export interface FakeTelegramOptions {
  /** The bot token the fake accepts; other tokens get 401 Unauthorized. */
  token: string;
}

/** One accepted `sendMessage` call. */
export interface FakeTelegramSend {
  chatId: string;
  text: string;
  messageId: number;
}

export interface FakeTelegramRequest {
  method: string;
  /** Path with the token replaced by `<token>`, e.g. `/bot<token>/getUpdates`. */
  path: string;
  query: Record<string, string>;
  body: string;
}

export interface FakeTelegram {
  /** Use as the instance's `base_url`. */
  readonly baseUrl: string;
  readonly sends: FakeTelegramSend[];
  readonly requests: FakeTelegramRequest[];
  /** Offsets (as sent) of every getUpdates call. */
  readonly getUpdatesOffsets: (number | undefined)[];
  /** Queues a private-chat text message; returns its `update_id`. */
  enqueueText(input: { chatId: number; text: string; fromId?: number }): number;
  /** Queues any update object; `update_id` is assigned when missing. Returns it. */
  enqueueUpdate(update: Record<string, unknown>): number;
  /** The next `times` sendMessage calls get 429 with `parameters.retry_after`. */
  rateLimitSends(retryAfterSecs: number, times?: number): void;
  /** The next `times` getUpdates calls fail with `status`. */
  failGetUpdates(status: number, times?: number): void;
  close(): Promise<void>;
}

function fail(res: ServerResponse, status: number, description: string, extra: object = {}): void {
  sendJson(res, status, { ok: false, error_code: status, description, ...extra });
}

interface Waiter {
  offset: number | undefined;
  res: ServerResponse;
  timer: TimerHandle;
}

/**
 * A loopback stand-in for the Telegram Bot API (`getUpdates` long polling and `sendMessage`),
 * following the public Bot API documentation: `{ok, result}` / `{ok: false, error_code,
 * description, parameters}` answers, offsets that confirm earlier updates, 409 for a second
 * concurrent getUpdates, 4096-character text limit.
 */
export async function createFakeTelegram(options: FakeTelegramOptions): Promise<FakeTelegram> {
  const sends: FakeTelegramSend[] = [];
  const requests: FakeTelegramRequest[] = [];
  const getUpdatesOffsets: (number | undefined)[] = [];
  let queue: Record<string, unknown>[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  const sendLimits: number[] = [];
  const pollFailures: number[] = [];
  let waiter: Waiter | undefined;

  const pending = (offset: number | undefined): Record<string, unknown>[] => {
    if (offset !== undefined) queue = queue.filter((u) => (u.update_id as number) >= offset);
    return queue.slice(0, 100);
  };

  const answerWaiter = (): void => {
    if (!waiter) return;
    const updates = pending(waiter.offset);
    if (updates.length === 0) return;
    const w = waiter;
    waiter = undefined;
    w.timer.cancel();
    sendJson(w.res, 200, { ok: true, result: updates });
  };

  const server = await startLoopbackServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = await readBody(req);
    const m = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    requests.push({
      method: m?.[2] ?? '',
      path: url.pathname.split(options.token).join('<token>'),
      query: Object.fromEntries(url.searchParams),
      body,
    });
    if (!m) {
      fail(res, 404, 'Not Found');
      return;
    }
    if (m[1] !== options.token) {
      fail(res, 401, 'Unauthorized');
      return;
    }
    // Parameters may come in the query string, as JSON or as a form body.
    const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const type = req.headers['content-type'] ?? '';
    if (body !== '' && type.includes('application/json')) {
      try {
        Object.assign(params, JSON.parse(body));
      } catch {
        fail(res, 400, "Bad Request: can't parse JSON object");
        return;
      }
    } else if (body !== '') {
      Object.assign(params, Object.fromEntries(new URLSearchParams(body)));
    }
    if (m[2] === 'getUpdates') {
      const status = pollFailures.shift();
      if (status !== undefined) {
        fail(
          res,
          status,
          status === 409 ? 'Conflict: terminated by other getUpdates request' : 'Internal Server Error',
        );
        return;
      }
      const offset = params.offset === undefined ? undefined : Number(params.offset);
      const timeout = params.timeout === undefined ? 0 : Number(params.timeout);
      getUpdatesOffsets.push(offset);
      if (waiter) {
        const old = waiter;
        waiter = undefined;
        old.timer.cancel();
        fail(
          old.res,
          409,
          'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
        );
      }
      const updates = pending(offset);
      if (updates.length > 0 || timeout <= 0) {
        sendJson(res, 200, { ok: true, result: updates });
        return;
      }
      const w: Waiter = {
        offset,
        res,
        timer: setTimer(() => {
          if (waiter === w) waiter = undefined;
          sendJson(res, 200, { ok: true, result: [] });
        }, timeout * 1000),
      };
      waiter = w;
      res.on('close', () => {
        w.timer.cancel();
        if (waiter === w) waiter = undefined;
      });
      return;
    }
    if (m[2] === 'sendMessage') {
      const chatId = params.chat_id;
      const text = params.text;
      if (chatId === undefined || chatId === '') {
        fail(res, 400, 'Bad Request: chat_id is empty');
        return;
      }
      if (typeof text !== 'string' || text === '') {
        fail(res, 400, 'Bad Request: message text is empty');
        return;
      }
      if (text.length > 4096) {
        fail(res, 400, 'Bad Request: message is too long');
        return;
      }
      const retryAfter = sendLimits.shift();
      if (retryAfter !== undefined) {
        fail(res, 429, `Too Many Requests: retry after ${retryAfter}`, {
          parameters: { retry_after: retryAfter },
        });
        return;
      }
      const messageId = nextMessageId++;
      sends.push({ chatId: String(chatId), text, messageId });
      sendJson(res, 200, {
        ok: true,
        result: {
          message_id: messageId,
          date: 1700000000,
          chat: { id: Number(chatId), type: 'private' },
          text,
        },
      });
      return;
    }
    fail(res, 404, 'Not Found');
  });

  const enqueueUpdate = (update: Record<string, unknown>): number => {
    const id = typeof update.update_id === 'number' ? update.update_id : nextUpdateId++;
    queue.push({ ...update, update_id: id });
    answerWaiter();
    return id;
  };

  return {
    baseUrl: server.baseUrl,
    sends,
    requests,
    getUpdatesOffsets,
    enqueueUpdate,
    enqueueText({ chatId, text, fromId }) {
      return enqueueUpdate({
        message: {
          message_id: nextMessageId++,
          from: { id: fromId ?? chatId, is_bot: false, first_name: 'Test' },
          chat: { id: chatId, type: 'private', first_name: 'Test' },
          date: 1700000000,
          text,
        },
      });
    },
    rateLimitSends(retryAfterSecs, times = 1) {
      for (let i = 0; i < times; i++) sendLimits.push(retryAfterSecs);
    },
    failGetUpdates(status, times = 1) {
      for (let i = 0; i < times; i++) pollFailures.push(status);
    },
    async close() {
      waiter?.timer.cancel();
      waiter = undefined;
      await server.close();
    },
  };
}
